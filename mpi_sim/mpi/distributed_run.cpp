#include "mpi_sim/mpi/distributed_run.hpp"

#include <cereal/archives/binary.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <streambuf>
#include <string_view>

#include "mpi_sim/engine/collective_matching.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "mpi_sim/mpi/mpi_clock_sync.hpp"
#include "mpi_sim/mpi/process_packing.hpp"
#include "mpi_sim/mpi/text_exchange.hpp"
#include "mpi_sim/mpi/timeline_stream.hpp"
#include "perfsim/rank_result_serialization.hpp"

namespace perfsim::mpi {
namespace {

// Each process's bytes on process 0, in process order, in one buffer: splitting it into a
// string per process would hold every gathered result twice.
struct GatheredBytes {
  std::string all;
  std::vector<int> offsets;
  std::vector<int> lengths;
  std::string_view part(std::size_t i) const {
    return std::string_view(all).substr(static_cast<std::size_t>(offsets[i]),
                                        static_cast<std::size_t>(lengths[i]));
  }
};

// Reads bytes in place (an istringstream would copy them first).
class ViewBuffer : public std::streambuf {
 public:
  explicit ViewBuffer(std::string_view bytes) {
    char* begin = const_cast<char*>(bytes.data());  // only read: get area
    setg(begin, begin, begin + bytes.size());
  }
};

// Gathers each process's bytes on process 0 (in process order).
GatheredBytes gather_bytes(MPI_Comm world, const std::string& local) {
  int size = 0, me = 0;
  MPI_Comm_size(world, &size);
  MPI_Comm_rank(world, &me);
  int length = static_cast<int>(local.size());
  std::vector<int> lengths(me == 0 ? size : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world);
  std::vector<int> offsets(lengths.size(), 0);
  std::string all;
  if (me == 0) {
    long total = 0;
    for (int i = 0; i < size; ++i) {
      offsets[i] = static_cast<int>(total);
      total += lengths[i];
    }
    if (total > 2'000'000'000L)
      throw RuntimeFailure("result gather exceeds 2 GB");
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(local.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE,
              0, world);
  return GatheredBytes{std::move(all), std::move(offsets), std::move(lengths)};
}

}  // namespace

std::vector<int> block_placement(int world_size, int ranks_per_process) {
  std::vector<int> placement(static_cast<std::size_t>(world_size));
  for (int rank = 0; rank < world_size; ++rank)
    placement[rank] = rank / ranks_per_process;
  return placement;
}

std::vector<int> ranks_placed_on(std::span<const int> placement, int process) {
  std::vector<int> ranks;
  for (std::size_t rank = 0; rank < placement.size(); ++rank) {
    if (placement[rank] == process)
      ranks.push_back(static_cast<int>(rank));
  }
  return ranks;
}

CollectiveCheck check_collectives(MPI_Comm world,
                                  std::span<const engine::RankProgram> local_programs,
                                  int world_size) {
  // One reduction decides; only a mismatch gathers the signatures to describe it.
  engine::MatchResidue residue = engine::collective_match_residue(local_programs);
  MPI_Allreduce(MPI_IN_PLACE, residue.data(), static_cast<int>(residue.size()), MPI_UINT64_T,
                MPI_SUM, world);
  if (residue == engine::MatchResidue{0, 0})
    return CollectiveCheck{};
  std::vector<engine::RankSignatures> local;
  for (const engine::RankProgram& program : local_programs)
    local.push_back(engine::rank_signatures(program));
  const GatheredBytes parts = gather_bytes(world, engine::serialize_signatures(local));
  int me = 0;
  MPI_Comm_rank(world, &me);
  std::string verdict;
  if (me == 0) {
    std::vector<engine::RankSignatures> all;
    for (std::size_t i = 0; i < parts.lengths.size(); ++i) {
      for (auto& rank : engine::deserialize_signatures(std::string(parts.part(i))))
        all.push_back(std::move(rank));
    }
    verdict = engine::find_collective_mismatch(all, world_size).value_or("");
  }
  verdict = broadcast_text_from_root(world, verdict);
  if (!verdict.empty())
    throw AllRanksError("", "collective check", verdict);
  return CollectiveCheck{.details_gathered = true};
}

std::vector<RankResult> run_distributed(MPI_Comm world,
                                        std::span<const engine::RankProgram> local_programs,
                                        const std::vector<int>& process_of_rank,
                                        const HostOverheads& overheads,
                                        const DistributedOptions& options,
                                        DistributedStats* stats) {
  std::map<std::string, std::vector<int>> groups;
  for (const engine::RankProgram& program : local_programs)
    engine::for_each_collective_group(
        program, [&](const std::string& group, const engine::MemberList& members) {
          groups.try_emplace(group, members.ranks());
        });
  MpiClockSync sync(
      world, process_of_rank,
      std::vector<std::pair<std::string, std::vector<int>>>(groups.begin(), groups.end()),
      options.wait_mode ? *options.wait_mode : wait_mode_of_this_node(), options.stall_timeout);
  std::vector<engine::RankSimulator> simulators;
  simulators.reserve(local_programs.size());
  for (const engine::RankProgram& program : local_programs) {
    simulators.emplace_back(program, overheads, sync, options.record_timeline);
  }
  engine::run_to_completion(simulators, sync, options.progress, options.progress_interval);
  if (stats) {
    stats->communicators = sync.communicators();
    stats->reductions = sync.reductions();
  }

  std::vector<RankResult> local_results;
  local_results.reserve(simulators.size());
  for (engine::RankSimulator& simulator : simulators)
    local_results.push_back(simulator.take_result());
  // Processes finish at different times; those done early must not spin in the gather, and
  // take part in the deadlock watch while they wait.
  sync.wait_for_all_processes();
  // Their results were moved out; the vector's block goes too (clear() would keep it).
  std::vector<engine::RankSimulator>().swap(simulators);
  if (options.record_timeline && options.timeline_wanted) {
    stream_timelines_to_root(world, local_results, process_of_rank, options.timeline_wanted,
                             options.timeline_sink);
  }
  int me = 0;
  MPI_Comm_rank(world, &me);
  // Process 0 keeps its own results as they are: serializing them to itself would hold them
  // twice more through the gather (its bytes, and their copy among everyone's).
  std::string local_bytes;
  if (me != 0) {
    std::ostringstream stream;
    {
      cereal::BinaryOutputArchive archive(stream);
      archive(local_results);
    }
    std::vector<RankResult>().swap(local_results);  // serialized: not held through the gather
    local_bytes = std::move(stream).str();
  }
  const GatheredBytes parts = gather_bytes(world, local_bytes);
  std::string().swap(local_bytes);
  std::vector<RankResult> all;
  if (me == 0)
    all.reserve(process_of_rank.size());
  for (RankResult& result : local_results)
    all.push_back(std::move(result));
  std::vector<RankResult>().swap(local_results);
  for (std::size_t i = 1; i < parts.lengths.size(); ++i) {
    ViewBuffer buffer(parts.part(i));
    std::istream input(&buffer);
    cereal::BinaryInputArchive archive(input);
    std::vector<RankResult> results;
    archive(results);
    for (auto& result : results)
      all.push_back(std::move(result));
  }
  std::sort(all.begin(), all.end(),
            [](const RankResult& a, const RankResult& b) { return a.sim_rank < b.sim_rank; });
  return all;
}

}  // namespace perfsim::mpi
