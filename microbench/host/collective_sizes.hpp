#pragma once
// Message sizes of a collective sweep (seed 001 Sec. IV-A: "equal message size starting from
// 4 bytes on each device and doubling it until exceeding the device memory"), in nccl-tests'
// size convention (collectives/bus_factor.hpp model_message_bytes), and the random per-peer
// sizes of an all-to-allv test ("random per-device message size for all-to-all").
#include <cstdint>
#include <vector>

#include "perfsim/comm.hpp"
#include "perfsim/units.hpp"

namespace perfsim::microbench {

struct CollectiveSizeSweep {
  Bytes start_bytes = 4;
  // Device memory one GPU may spend on the send and receive buffers of one test.
  Bytes memory_cap_bytes = 0;
  int element_bytes = 4;  // fp32
  int n_ranks = 2;
};

// Device memory one GPU needs for an out-of-place test of `message_bytes` (nccl-tests size):
// all-reduce, broadcast, all-to-all(v), send/recv: send + receive of the full size;
// all-gather: size / n sent, size received; reduce-scatter: size sent, size / n received.
Bytes collective_buffer_bytes(CollectiveKind kind, Bytes message_bytes, int n_ranks);

// The sizes start, 2 start, 4 start, ... while collective_buffer_bytes fits the cap. A size
// is rounded down to whole elements per rank where the collective splits it over the ranks
// (all-gather, reduce-scatter, all-to-all(v): a multiple of n_ranks * element_bytes; others a
// multiple of element_bytes), as nccl-tests does; sizes that round to 0 or repeat are dropped.
// Throws InputError("<collective sweep>", field, problem) for a non-positive start, element
// size or rank count, or a cap below the first size's buffers.
std::vector<Bytes> collective_message_sizes(CollectiveKind kind, const CollectiveSizeSweep& sweep);

// Whether the collective splits its message over the ranks (see above).
bool splits_over_ranks(CollectiveKind kind);

}  // namespace perfsim::microbench
