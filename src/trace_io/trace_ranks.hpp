#pragma once
// Which ranks of which job a set of traces covers, from the traces' own metadata (Kineto
// distributedInfo.rank / world_size, execution-trace rank and process-group sizes), never from
// the order the files were given in. A simulation of part of a job would silently predict
// another job (a world of one instead of eight), so an incomplete set is an error unless the
// user asked for one rank.
#include <string>
#include <vector>

#include "perfsim/trace.hpp"

namespace perfsim::trace_io {

struct RankCoverage {
  int world_size = 1;          // the job's size as the traces declare it
  std::string world_evidence;  // what declared it ("distributedInfo.world_size of X", ...)
  std::vector<int> present;    // metadata ranks of the traces, ascending
  std::vector<int> missing;    // ranks of the world no trace covers
};

// The job's world size: the largest of every trace's world_size, its process groups' members
// and sizes, its collectives' group sizes and peers, and its own rank + 1.
RankCoverage rank_coverage(const std::vector<Trace>& traces);

// Sorts by metadata rank. Throws InputError naming both files when two traces claim one rank.
void order_by_rank(std::vector<Trace>& traces);

// Throws InputError naming the missing ranks and the evidence of the world size unless the
// traces cover ranks 0..world_size-1; `how_to_fix` is appended (e.g. "or give --single-rank").
void require_whole_world(const std::vector<Trace>& traces, const std::string& how_to_fix);

// The trace whose metadata rank is `rank`. Throws InputError listing the ranks present.
const Trace& trace_of_rank(const std::vector<Trace>& traces, int rank);

// "0-3,5,7" for error messages.
std::string format_rank_list(const std::vector<int>& ranks);

}  // namespace perfsim::trace_io
