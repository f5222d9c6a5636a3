#pragma once
// How nccl-tests turns algorithm bandwidth into bus bandwidth, and the message-size rule of
// seed 001 Sec. IV-A for all-to-all(v).
#include <span>

#include "perfsim/comm.hpp"
#include "perfsim/units.hpp"

namespace perfsim::collectives {

// busbw = algbw * factor for a group of n_ranks (nccl-tests doc/PERFORMANCE.md): all-reduce
// 2(n-1)/n; all-gather, reduce-scatter, all-to-all(v) (n-1)/n; broadcast, reduce, send/recv 1.
// A barrier moves no payload: factor 0. Throws RuntimeFailure for n_ranks < 1.
double bus_factor(CollectiveKind kind, int n_ranks);

// Seed 001 Sec. IV-A: the size an all-to-all(v) is modeled with is the maximum over ranks of
// max(bytes sent, bytes received) by that rank. Spans are indexed by rank and must have equal
// length (RuntimeFailure otherwise).
Bytes all_to_allv_message_bytes(std::span<const Bytes> sent_per_rank,
                                std::span<const Bytes> received_per_rank);

// The size one rank's CommInfo contributes to the model, in nccl-tests' "size" convention:
// all-reduce, broadcast, reduce, send/recv: the buffer (bytes_in, else bytes_out); all-gather:
// the gathered output (bytes_out); reduce-scatter: the full input (bytes_in); all-to-all(v):
// max(sent, received), with sizes from the splits when bytes are missing.
Bytes model_message_bytes(const CommInfo& comm);

}  // namespace perfsim::collectives
