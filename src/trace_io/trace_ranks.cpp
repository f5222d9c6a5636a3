#include "trace_io/trace_ranks.hpp"

#include <algorithm>
#include <set>

#include "perfsim/error.hpp"

namespace perfsim::trace_io {
namespace {

struct WorldBound {
  int size = 1;
  std::string evidence;

  void raise(int candidate, const std::string& why) {
    if (candidate > size) {
      size = candidate;
      evidence = why;
    }
  }
};

void bound_from_trace(const Trace& trace, WorldBound& bound) {
  const std::string& file = trace.source;
  bound.raise(trace.world_size,
              "the world size " + std::to_string(trace.world_size) + " recorded in " + file);
  bound.raise(trace.rank + 1, "rank " + std::to_string(trace.rank) + " of " + file);
  for (const ProcessGroup& group : trace.process_groups) {
    for (int member : group.ranks) {
      bound.raise(member + 1, "process group '" + group.name + "' of " + file + " (rank " +
                                  std::to_string(member) + ")");
    }
  }
  for (const Op& op : trace.ops) {
    if (!op.comm)
      continue;
    const CommInfo& comm = *op.comm;
    const bool named_group = std::any_of(
        trace.process_groups.begin(), trace.process_groups.end(), [&](const ProcessGroup& group) {
          return group.name == comm.process_group && !group.ranks.empty();
        });
    // A collective of an unlisted group runs on the whole job: its size is the world's.
    if (!named_group && !is_point_to_point(comm.kind) && comm.group_size > 0) {
      bound.raise(comm.group_size, "the group size " + std::to_string(comm.group_size) + " of " +
                                       op.name + " in " + file);
    }
    const int peer = std::max(comm.peer_rank, comm.root_rank);
    if (peer >= 0)
      bound.raise(peer + 1, "peer rank " + std::to_string(peer) + " of " + op.name + " in " + file);
  }
}

}  // namespace

std::string format_rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (!out.empty())
      out += ",";
    out += std::to_string(ranks[i]);
    if (j > i)
      out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

RankCoverage rank_coverage(const std::vector<Trace>& traces) {
  WorldBound bound;
  std::set<int> present;
  for (const Trace& trace : traces) {
    bound_from_trace(trace, bound);
    present.insert(trace.rank);
  }
  RankCoverage coverage;
  coverage.world_size = bound.size;
  coverage.world_evidence = bound.evidence;
  coverage.present.assign(present.begin(), present.end());
  for (int rank = 0; rank < bound.size; ++rank) {
    if (!present.count(rank))
      coverage.missing.push_back(rank);
  }
  return coverage;
}

void order_by_rank(std::vector<Trace>& traces) {
  std::stable_sort(traces.begin(), traces.end(),
                   [](const Trace& a, const Trace& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < traces.size(); ++i) {
    if (traces[i].rank == traces[i - 1].rank) {
      throw InputError(traces[i].source, "rank",
                       "the trace metadata says rank " + std::to_string(traces[i].rank) +
                           ", which " + traces[i - 1].source + " also claims");
    }
  }
}

void require_whole_world(const std::vector<Trace>& traces, const std::string& how_to_fix) {
  const RankCoverage coverage = rank_coverage(traces);
  if (coverage.missing.empty())
    return;
  throw InputError(traces.empty() ? std::string() : traces.front().source, "rank",
                   "the traces cover rank(s) " + format_rank_list(coverage.present) +
                       " of a job of " + std::to_string(coverage.world_size) + " ranks (" +
                       coverage.world_evidence + "); missing rank(s) " +
                       format_rank_list(coverage.missing) + ": " + how_to_fix);
}

const Trace& trace_of_rank(const std::vector<Trace>& traces, int rank) {
  for (const Trace& trace : traces) {
    if (trace.rank == rank)
      return trace;
  }
  std::vector<int> present;
  for (const Trace& trace : traces)
    present.push_back(trace.rank);
  std::sort(present.begin(), present.end());
  throw InputError("--single-rank", "",
                   "no trace is rank " + std::to_string(rank) +
                       " (the traces given record rank(s) " + format_rank_list(present) + ")");
}

}  // namespace perfsim::trace_io
