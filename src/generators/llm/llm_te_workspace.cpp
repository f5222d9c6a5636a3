#include "generators/llm/llm_te_workspace.hpp"

namespace perfsim::generators::llm {

Bytes te_cublas_workspace_bytes(std::string_view architecture) {
  if (architecture.empty())
    return 0;
  // TE tests the compute capability's major version (>= 9); device files name the generation.
  const bool hopper_or_later = architecture == "hopper" || architecture == "blackwell";
  return hopper_or_later ? kTeCublasWorkspaceHopperBytes : kTeCublasWorkspaceBytes;
}

std::vector<Bytes> te_cublas_workspaces(const TransformerConfig& model,
                                        const ParallelConfig& parallel, Bytes bytes_per_stream) {
  const Bytes size = bytes_per_stream;
  if (size <= 0)
    return {};
  // initialize_ub replaces the single workspace by one three times its size.
  std::vector<Bytes> workspaces{parallel.tp_comm_overlap ? kTeUserbufferGemmStreams * size : size};
  if (model.is_moe())
    workspaces.insert(workspaces.end(), kTeGroupedGemmStreams, size);
  return workspaces;
}

}  // namespace perfsim::generators::llm
