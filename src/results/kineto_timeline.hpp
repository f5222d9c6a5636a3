#pragma once
// One simulated rank's iteration as the trace PyTorch's profiler (Kineto) writes, so tools
// made for real traces load it: Holistic Trace Analysis (HTA), Perfetto, TensorBoard.
//
// The fields HTA needs: `distributedInfo` (rank, world_size, backend) near the top of the
// file (HTA finds the rank by scanning lines for `"rank": N`), `deviceProperties`, and
// complete ("X") events with `cat` cpu_op / kernel / gpu_memcpy / gpu_memset,
// `pid`/`tid` = device/stream for GPU events with `args.stream` and `args.device`, times in us.
// HTA sorts kernels by name: communication matches ^nccl.*Kernel, memory ^Memcpy|^Memset;
// perfsim's communication slices are named `ncclDevKernel_<op>` so both agree.
// Not recorded by the engine, so absent: which op launched which kernel (every kernel has its
// own correlation id, no cuda_runtime launch events).
#include <filesystem>
#include <ostream>
#include <string>

#include "perfsim/rank_result.hpp"

namespace perfsim::results {

// `directory`/rank-N.json: one file per rank, as PyTorch's trace handler writes a directory.
std::filesystem::path kineto_trace_path(const std::filesystem::path& directory, int rank);

// The kernel name HTA classifies as perfsim did (communication slices get the NCCL prefix).
std::string kineto_kernel_name(const TimelineSlice& slice);

void write_kineto_trace(std::ostream& out, const RankResult& result, int world_size);

}  // namespace perfsim::results
