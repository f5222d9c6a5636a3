#include <gtest/gtest.h>

#include <cstdio>

#include "generators/llm/llm_rank_generator.hpp"
#include "memory/llm_memory.hpp"
#include "memory/trace_memory.hpp"

namespace perfsim::memory {
namespace {
namespace llm = generators::llm;

llm::TransformerConfig small_model() {
  llm::TransformerConfig model;
  model.name = "agree";
  model.layers = 4;
  model.hidden = 256;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 1024;
  model.vocab = 1024;
  model.seq_len = 512;
  model.micro_batch = 1;
  model.global_batch = 8;
  return model;
}

void show(const char* name, const llm::TransformerConfig& model, const llm::ParallelConfig& parallel) {
  DeviceMemory device;
  const Trace trace = llm::generate_llm_stage_template(model, parallel, 0).trace;
  const TraceMemoryReport report = trace_memory_report(trace, device);
  const LlmMemoryEstimate estimate = estimate_llm_memory(model, parallel, device);
  const StageMemory& stage = estimate.stages.front();
  std::printf("%s\n%s", name, format_trace_memory_report(report).c_str());
  std::printf("closed: params %lld fp8 %lld grads %lld opt %lld act %lld\n",
              (long long)stage.parameter_bytes, (long long)stage.fp8_weight_bytes,
              (long long)stage.gradient_bytes, (long long)stage.optimizer_bytes,
              (long long)stage.activation_bytes);
  const TraceLifetimes lifetimes = infer_tensor_lifetimes(trace);
  std::size_t first_backward = 0;
  while (lifetimes.phase_by_position[first_backward] != TracePhase::kBackward) ++first_backward;
  long long boundary = 0;
  for (const auto& t : lifetimes.tensors)
    if (t.category == MemoryCategory::kActivations && t.first_position < first_backward && t.last_position >= first_backward) boundary += t.bytes;
  std::printf("boundary act %lld = %.3f sbh at %s\n", boundary, boundary / 131072.0, trace.ops[first_backward].name.c_str());
  std::printf("peak act %.3f sbh closed %.3f sbh\n", report.live_at_peak[MemoryCategory::kActivations] / 131072.0, stage.activation_bytes/131072.0);
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i)
    std::printf("  replay %s %lld\n", std::string(memory_category_name(static_cast<MemoryCategory>(i))).c_str(),
                (long long)report.live_at_peak.bytes[i]);
}

TEST(Explore, Print) {
  llm::ParallelConfig parallel;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.gradient_dtype = DType::kBFloat16;
  show("bf16", small_model(), parallel);
  auto p1 = parallel; p1.zero_stage = 1; show("zero1", small_model(), p1);
  auto m = small_model(); m.dtype = DType::kFloat8; show("fp8", m, parallel);
  auto c = parallel; c.cp = 2; show("cp2", small_model(), c);
  auto t = parallel; t.tp = 2; t.sequence_parallel = true; show("tp2sp", small_model(), t);
  auto t2 = parallel; t2.tp = 2; show("tp2", small_model(), t2);
  auto z3 = parallel; z3.zero_stage = 3; show("zero3", small_model(), z3);
  auto fr = parallel; fr.recompute = llm::Recompute::kFull; show("full", small_model(), fr);
  auto sr = parallel; sr.recompute = llm::Recompute::kSelective; auto mu = small_model(); mu.attention = llm::AttentionKernel::kUnfused; show("selective unfused", mu, sr);
  show("unfused", mu, parallel);
  auto moe = small_model(); moe.moe.num_experts = 4; moe.moe.top_k = 2; moe.moe.expert_ffn_hidden = 512;
  auto e = parallel; e.ep = 2; show("moe ep2", moe, e);
}

}  // namespace
}  // namespace perfsim::memory
