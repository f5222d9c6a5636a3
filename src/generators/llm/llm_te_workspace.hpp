#pragma once
// Transformer Engine's cuBLAS workspaces (transformer_engine/pytorch/module/base.py): TE's
// GEMMs do not use PyTorch's cuBLAS workspace but their own, allocated once per process through
// the caching allocator and kept for the whole run:
// - get_workspace(): one workspace of get_cublas_workspace_size_bytes(), 32 MiB (33,554,432 B)
//   on compute capability 9 and later (Hopper: its FP8 and split-K GEMMs need the room), 4 MiB
//   (4,194,304 B) on earlier GPUs. TE 2.x on Hopper adds 256 B for NVFP4 scales, left out.
// - initialize_ub (--tp-comm-overlap, the userbuffer overlap): the workspace is repeated
//   _NUM_MAX_UB_STREAMS = 3 times, one per concurrent GEMM stream of the chunked overlaps.
// - get_multi_stream_cublas_workspace(): grouped GEMMs (te::grouped_gemm of MoE experts) run
//   their GEMMs over num_cublas_streams = 4 streams, each with a workspace of the same size.
#include <string_view>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "perfsim/units.hpp"

namespace perfsim::generators::llm {

inline constexpr Bytes kTeCublasWorkspaceHopperBytes = 33'554'432;
inline constexpr Bytes kTeCublasWorkspaceBytes = 4'194'304;
inline constexpr int kTeUserbufferGemmStreams = 3;
inline constexpr int kTeGroupedGemmStreams = 4;

// get_cublas_workspace_size_bytes() for a device file's "architecture" (hopper and later:
// 32 MiB; ampere, volta, any other: 4 MiB); 0 for an empty one (no device: not modelled).
Bytes te_cublas_workspace_bytes(std::string_view architecture);

// The workspaces one rank holds, each a separate allocation, for workspaces of
// `bytes_per_stream` (te_cublas_workspace_bytes); empty when that is 0.
std::vector<Bytes> te_cublas_workspaces(const TransformerConfig& model,
                                        const ParallelConfig& parallel, Bytes bytes_per_stream);

}  // namespace perfsim::generators::llm
