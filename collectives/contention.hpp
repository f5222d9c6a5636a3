#pragma once
// Concurrent collectives that share links share their bandwidth.
//
// The rule (processor sharing on the busiest shared link): a collective's traffic uses
//   - the NVLink/NVSwitch port of each of its GPUs that has a group peer on the same node
//     ("nvlink:<node>:<gpu>"; NVSwitch is non-blocking, so groups on disjoint GPUs never meet),
//   - the NIC serving each of its GPUs when the group spans nodes ("nic:<node>:<nic>"; rails
//     are per NIC, so DP traffic on rail 3 meets PP traffic on rail 3 only).
// With k collectives in flight on a link, each gets 1/k of it. A collective's transfer time
// (its duration minus the model's latency share, nccl_tuning.hpp) is stretched by the largest
// k over the links it uses; its latency is not. Equal shares assume equal demands, as NCCL's
// channels on one NIC or port are served round-robin; a collective that finishes early would
// hand its share back, which this one-shot rule ignores (it overestimates the longer ones).
// Leaf uplinks of an oversubscribed leaf/spine (topology/leaf_spine.hpp) are shared by load,
// not by count: the spine traffic of all collectives in flight adds up per leaf, and a
// collective crossing a leaf whose total exceeds its uplinks is stretched by total / capacity
// (divided by the slowdown its own traffic already put in its duration), when that exceeds k.
#include <set>
#include <span>
#include <string>
#include <vector>

#include "collectives/collective_model.hpp"

namespace perfsim::collectives {

std::set<std::string> links_used(const topology::Topology& topology,
                                 std::span<const int> global_ranks);

struct ConcurrentCollective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Bytes bytes = 0;
  std::vector<int> ranks;  // global ranks
};

// The duration of each collective when all of them run at once (same order as `active`).
std::vector<DurationUs> contended_durations_us(const CollectiveModel& model,
                                               std::span<const ConcurrentCollective> active);

}  // namespace perfsim::collectives
