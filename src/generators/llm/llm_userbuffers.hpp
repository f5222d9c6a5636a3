#pragma once
// The communication buffers Transformer Engine allocates once per process for its userbuffer
// TP overlap (ParallelConfig::tp_comm_overlap): initialize_ub
// (transformer_engine/pytorch/module/base.py) registers one communicator per overlapped GEMM
// of its default config, each with a buffer of Megatron's ub shape [s b / CP, h]
// (megatron/training initialize_tp_communicators). The buffers of the all-gather overlaps are
// FP8 (one byte) under the FP8 recipe, those of the reduce-scatter overlaps stay in the
// activation dtype. They live for the whole run, outside PyTorch's caching allocator.
#include <cstdint>
#include <string_view>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "perfsim/dtype.hpp"

namespace perfsim::generators::llm {

struct Userbuffer {
  std::string_view gemm;  // TE's name: "qkv_fprop", "proj_dgrad", ...
  DType dtype = DType::kBFloat16;
  std::int64_t rows = 0;  // s b / CP tokens
  std::int64_t hidden = 0;
  std::int64_t elements() const { return rows * hidden; }
};

// TE's ten default communicators (four ring exchanges, two pipelined reduce-scatters, four
// bulk overlaps); none without tp_comm_overlap.
std::vector<Userbuffer> userbuffers(const TransformerConfig& model, const ParallelConfig& parallel);

}  // namespace perfsim::generators::llm
