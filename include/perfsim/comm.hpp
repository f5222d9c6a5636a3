#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim {

enum class CollectiveKind : std::uint8_t {
  kAllReduce,
  kAllToAll,   // equal splits
  kAllToAllv,  // per-peer split sizes
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kBarrier,
  kSend,
  kRecv,
  // DeepEP / HybridEP normal-mode dispatch or combine (Megatron-Core's flex token dispatcher):
  // each token crosses the network once per distinct destination node and NVLink once per
  // distinct destination GPU (collectives/hierarchical_all_to_all.hpp). CommInfo::bytes_in is
  // the node-level volume (one copy per token and distinct node of the group, its own node
  // included), bytes_out the GPU-level volume (one copy per token and distinct GPU), for
  // dispatch and combine alike (combine moves the same copies the other way).
  kHierarchicalAllToAll,
};

std::string_view collective_name(CollectiveKind kind);
// Accepts trace spellings: "allreduce", "all_reduce", "nccl:all_reduce", "all_to_all",
// "alltoall_base", "all_to_allv", "allgather", "_allgather_base", "reduce_scatter", "broadcast",
// "send", "recv", "barrier", ...
std::optional<CollectiveKind> parse_collective(std::string_view name);
bool is_point_to_point(CollectiveKind kind);

// The channel of send/recv traffic from one rank to another: the collective model routes it
// under the name "p2p:<from>-><to>".
std::string point_to_point_group_name(int from_rank, int to_rank);
// Where the engine pairs a send with its recv: the channel itself for match tag 0, else one
// stream of it per tag, "p2p:<from>-><to>/tag<t>" (sends and recvs pair in order within it).
std::string point_to_point_stream_name(int from_rank, int to_rank, std::int64_t match_tag);

// A process group of the traced job: its name as the trace spells it and its global ranks.
struct ProcessGroup {
  std::string name;         // "0", "default_pg", or a generator's "tp/3"
  std::vector<int> ranks;   // global ranks, ascending; empty = whole world
  std::string description;  // pg_desc when the trace has it
};

// What a communication op moves, per rank (seed 001 Sec. IV-A).
struct CommInfo {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string process_group;  // ProcessGroup::name; "" = world
  int group_size = 0;         // 0 = unknown (taken from the group)
  DType dtype = DType::kUnknown;
  Bytes bytes_in = 0;   // bytes this rank sends / contributes
  Bytes bytes_out = 0;  // bytes this rank receives / ends with
  // all-to-allv split sizes in elements, one per peer, as the trace gives them.
  std::vector<std::int64_t> in_split_elements;
  std::vector<std::int64_t> out_split_elements;
  int peer_rank = -1;    // send/recv: the other side (global rank)
  int root_rank = -1;    // broadcast/reduce root (global rank) when known
  std::int64_t tag = 0;  // as the trace gives it (an execution trace's c10d sequence number)
  // send/recv: which of the rank pair's independent message streams it belongs to; a send
  // pairs with the peer's recv of the same match tag, in order. Not `tag`: an execution trace's
  // is c10d's sequence number, which differs between the two sides. 0 = the pair's one stream.
  std::int64_t match_tag = 0;
};

}  // namespace perfsim
