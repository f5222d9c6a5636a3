#pragma once
// A synthetic workload for engine benchmarks and smoke runs: every rank repeats (compute
// kernel, collective over its group). Groups are consecutive blocks of ranks (like tensor
// parallel groups) or strided sets (like data-parallel groups), or the whole world.
#include <string>

#include "perfsim/comm.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::generators {

enum class GroupLayout { kWorld, kConsecutive, kStrided };

struct SyntheticWorkload {
  int ranks = 8;
  int repetitions = 20;
  DurationUs compute_us = 200;
  CollectiveKind collective = CollectiveKind::kAllReduce;
  Bytes collective_bytes = 64'000'000;
  GroupLayout layout = GroupLayout::kWorld;
  int group_size = 0;  // members per group for kConsecutive / kStrided
  // The collective's duration, given rather than modelled so that the engine can be measured
  // on its own: start-up latency plus bus bytes over this bus bandwidth (nccl-tests factors).
  DurationUs collective_latency_us = 20;
  BandwidthGBps bus_bandwidth_GBps = 100;
  bool wait_after_collective = true;  // compute waits for the collective (true sync)
};

// Throws InputError ("<synthetic>", field, problem) for inconsistent settings.
void validate(const SyntheticWorkload& workload);

// The members of `rank`'s group, ascending.
std::vector<int> synthetic_group_members(const SyntheticWorkload& workload, int rank);

// Duration of one synthetic collective as described above.
DurationUs synthetic_collective_us(const SyntheticWorkload& workload);

// The trace of one rank, with "measured" durations set from the settings above.
Trace generate_synthetic_rank(const SyntheticWorkload& workload, int rank);

}  // namespace perfsim::generators
