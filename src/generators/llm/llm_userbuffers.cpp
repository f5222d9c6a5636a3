#include "generators/llm/llm_userbuffers.hpp"

#include <array>

namespace perfsim::generators::llm {
namespace {

// initialize_ub's default methods; `all_gather` marks layers_all_gather_overlap, whose buffers
// hold FP8 data under the FP8 recipe (the reduce-scatter buffers hold the GEMM's bf16 output).
struct DefaultCommunicator {
  std::string_view gemm;
  bool all_gather;
};
constexpr std::array<DefaultCommunicator, 10> kDefaultCommunicators{{
    {"qkv_fprop", true},    // ring exchange
    {"fc1_fprop", true},    // ring exchange
    {"proj_dgrad", true},   // ring exchange
    {"fc2_dgrad", true},    // ring exchange
    {"proj_fprop", false},  // pipelined reduce-scatter
    {"fc2_fprop", false},   // pipelined reduce-scatter
    {"qkv_dgrad", true},    // bulk all-gather
    {"qkv_wgrad", false},   // bulk reduce-scatter
    {"fc1_dgrad", true},    // bulk all-gather
    {"fc1_wgrad", false},   // bulk reduce-scatter
}};

}  // namespace

std::vector<Userbuffer> userbuffers(const TransformerConfig& model,
                                    const ParallelConfig& parallel) {
  std::vector<Userbuffer> buffers;
  if (!parallel.tp_comm_overlap)
    return buffers;
  const std::int64_t rows =
      model.seq_len * static_cast<std::int64_t>(micro_batch_size(model, parallel)) / parallel.cp;
  for (const DefaultCommunicator& communicator : kDefaultCommunicators) {
    const DType dtype =
        model.fp8() && communicator.all_gather ? DType::kFloat8 : model.activation_dtype();
    buffers.push_back({communicator.gemm, dtype, rows, model.hidden});
  }
  return buffers;
}

}  // namespace perfsim::generators::llm
