#pragma once
// How NCCL executes a ring collective (issue 17): the message is cut into loops, each loop into
// one chunk per rank and channel, and every rank walks the loop's steps (2(n-1) all-reduce, n-1
// all-gather / reduce-scatter, n broadcast / reduce) passing one chunk per channel to its
// neighbour each step. Our code after NCCL 2.2x src/enqueue.cc (calcCollChunking: chunk and loop
// sizes) and src/device/all_reduce.h (runRing); the constants are NCCL's defaults:
//   Simple: 4 MiB buffer / NCCL_STEPS (8) = 512 KiB per step, ring chunk = 4 steps (2 MiB),
//           moved in slices of 2 steps (1 MiB): 2 slices per chunk;
//   LL:     512 KiB buffer / 8 = 64 KiB per step, half of it data: 32 KiB chunks, one slice;
//   LL128:  120 elements x 640 threads x 8 B = 614400 B per step, 120 of every 128 B data:
//           576000 B chunks, one slice.
// loop bytes = channels x ranks x chunk; loops = ceil(bytes / loop bytes); the last loop's chunk
// is what remains divided over ranks x channels.
//
// Slices: Simple's receiver waits for whole slices (2 per chunk); LL and LL128 put a flag in
// every line, so data is forwarded line by line (8 of 16 bytes, 120 of 128 bytes per line).
//
// Time. A step of rank r needs rank r-1's previous step, slice by slice: with per-step hop
// latency a (NCCL's, averaged over the ring's NVLink and network hops, as its tuner has them)
// and per-step transfer t = chunk x channels / bus bandwidth, a slice is forwarded once it has
// arrived, so in steady state the ring advances one step every max(t, a + t / slices). The
// first loop is NCCL's own cost (steps x (a + t): its tuner constants are fitted to measured
// single-loop rings, the ring plateau factor included); the pipeline does not drain between
// loops (a rank's first step of the next loop sends its own data), so each later loop adds
//   steps x max(t, a + t / slices):
// the transfer alone when it hides the hop, the hop plus one slice when it does not (small
// chunks: a partial last loop, or a protocol forced far beyond its sizes).
#include "collectives/nccl_tuning.hpp"
#include "perfsim/units.hpp"

namespace perfsim::collectives {

// NCCL's ring chunk (data bytes per channel per step of a full loop) and slices per chunk.
double ring_chunk_bytes(NcclProtocol protocol);
int ring_slices_per_chunk(NcclProtocol protocol);

struct RingLoops {
  int full_loops = 0;             // loops that move full chunks
  double full_chunk_bytes = 0.0;  // their chunk (ring_chunk_bytes)
  double last_chunk_bytes = 0.0;  // chunk of the final, partial loop (0: none)
  int loops() const { return full_loops + (last_chunk_bytes > 0.0 ? 1 : 0); }
};
// `bytes`: the per-rank buffer NCCL loops over (all-reduce: the buffer; all-gather /
// reduce-scatter: n x the per-rank share, i.e. the nccl-tests size).
RingLoops ring_loops(double bytes, int n_ranks, int channels, NcclProtocol protocol);

// The pipelined time above. `step_latency_us`: the hop latency a of one step; `busbw_GBps`: the
// ring's bus bandwidth (all channels); `steps_per_loop` per collective.
DurationUs ring_execution_us(const RingLoops& loops, int steps_per_loop, int channels,
                             int slices_per_chunk, DurationUs base_latency_us,
                             DurationUs step_latency_us, double busbw_GBps);

}  // namespace perfsim::collectives
