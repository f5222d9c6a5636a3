#include "collectives/ring_pipeline.hpp"

#include <algorithm>
#include <cmath>

namespace perfsim::collectives {
namespace {

constexpr double kSteps = 8.0;                           // NCCL_STEPS
constexpr double kSimpleBuffer_bytes = 4.0 * 1048576.0;  // NCCL_BUFFSIZE default
constexpr double kSimpleChunkSteps = 4.0;                // ALLREDUCE_CHUNKSTEPS = NCCL_STEPS / 2
constexpr double kSimpleSliceSteps = 2.0;                // ALLREDUCE_SLICESTEPS = NCCL_STEPS / 4
// LL: NCCL_LL_LINES_PER_THREAD x NCCL_LL_MAX_NTHREADS x NCCL_STEPS x 16-byte lines, half data.
constexpr double kLLBuffer_bytes = 8.0 * 512.0 * kSteps * 16.0;
// LL128: NCCL_LL128_ELEMS_PER_THREAD x NCCL_LL128_MAX_NTHREADS x NCCL_STEPS x 8 bytes; 120 of
// every 128 bytes (NCCL_LL128_DATAELEMS / NCCL_LL128_LINEELEMS) carry data.
constexpr double kLL128Buffer_bytes = 120.0 * 640.0 * kSteps * 8.0;

}  // namespace

double ring_chunk_bytes(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kSimple:
      return kSimpleBuffer_bytes / kSteps * kSimpleChunkSteps;
    case NcclProtocol::kLL:
      return kLLBuffer_bytes / kSteps / 2.0;
    case NcclProtocol::kLL128:
      return kLL128Buffer_bytes / kSteps / 128.0 * 120.0;
  }
  return 0.0;
}

int ring_slices_per_chunk(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kSimple:  // the receiver waits for a whole slice
      return static_cast<int>(kSimpleChunkSteps / kSimpleSliceSteps);
    case NcclProtocol::kLL:  // a flag in every 16-byte line: 8 data bytes forwarded at a time
      return static_cast<int>(ring_chunk_bytes(protocol) / 8.0);
    case NcclProtocol::kLL128:  // a flag in every 128-byte line: 120 data bytes at a time
      return static_cast<int>(ring_chunk_bytes(protocol) / 120.0);
  }
  return 1;
}

RingLoops ring_loops(double bytes, int n_ranks, int channels, NcclProtocol protocol) {
  RingLoops loops;
  if (!(bytes > 0.0) || n_ranks < 1 || channels < 1)
    return loops;
  const double chunk = ring_chunk_bytes(protocol);
  loops.full_chunk_bytes = chunk;
  const double loop_bytes = chunk * n_ranks * channels;
  loops.full_loops = static_cast<int>(std::floor(bytes / loop_bytes));
  const double rest = bytes - loops.full_loops * loop_bytes;
  if (rest > 0.0)
    loops.last_chunk_bytes = rest / (static_cast<double>(n_ranks) * channels);
  return loops;
}

DurationUs ring_execution_us(const RingLoops& loops, int steps_per_loop, int channels,
                             int slices_per_chunk, DurationUs base_latency_us,
                             DurationUs step_latency_us, double busbw_GBps) {
  const auto transfer_us = [&](double chunk_bytes) {
    return chunk_bytes * channels / (1e3 * busbw_GBps);
  };
  // The first loop as NCCL's cost prices it: every step its hop latency and its transfer.
  const auto first_loop_us = [&](double chunk_bytes) {
    return steps_per_loop * (step_latency_us + transfer_us(chunk_bytes));
  };
  // Later loops in steady state: a step every max(t, a + t / slices).
  const auto later_loop_us = [&](double chunk_bytes) {
    const double t = transfer_us(chunk_bytes);
    return steps_per_loop * std::max(t, step_latency_us + t / std::max(1, slices_per_chunk));
  };
  double time_us = base_latency_us;
  if (loops.full_loops > 0) {
    time_us += first_loop_us(loops.full_chunk_bytes) +
               (loops.full_loops - 1) * later_loop_us(loops.full_chunk_bytes);
    if (loops.last_chunk_bytes > 0.0)
      time_us += later_loop_us(loops.last_chunk_bytes);
  } else if (loops.last_chunk_bytes > 0.0) {
    time_us += first_loop_us(loops.last_chunk_bytes);
  }
  return time_us;
}

}  // namespace perfsim::collectives
