// `perfsim memory --format json|csv`: the documents carry the closed form's figures exactly
// (every stage, every component, the verdict), and an unknown capacity gives no verdict.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "memory/llm_memory.hpp"
#include "memory/memory_report_json.hpp"

namespace perfsim::memory {
namespace {

namespace llm = generators::llm;

struct Case {
  llm::TransformerConfig model;
  llm::ParallelConfig parallel;
};

// A shipped model file (a path, not a string concatenation: GCC 12's -Warray-bounds misfires
// on the inlined concatenation).
llm::TransformerConfig shipped_model(const char* file) {
  return llm::load_transformer_config(
      (std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs" / "models" / file).string());
}

Case gpt_case() {
  Case out;
  out.model = shipped_model("llama2-7b.json");
  out.parallel.tp = 2;
  out.parallel.pp = 4;
  out.parallel.dp = 2;
  out.parallel.zero_stage = 1;
  out.parallel.micro_batch = 1;
  return out;
}

TEST(MemoryReportJson, LlmStagesCarryTheEstimate) {
  const Case c = gpt_case();
  DeviceMemory device;
  device.name = "test GPU";
  device.capacity_bytes = 40'000'000'000;
  device.architecture = "hopper";  // 32 MiB of cuBLAS workspace
  const LlmMemoryEstimate estimate = estimate_llm_memory(c.model, c.parallel, device);
  const auto doc = llm_memory_json(c.model, c.parallel, estimate, device);
  EXPECT_EQ(doc["schema"], "perfsim-memory/1");
  ASSERT_EQ(doc["stages"].size(), estimate.stages.size());
  for (std::size_t i = 0; i < estimate.stages.size(); ++i) {
    const auto& stage = doc["stages"][i];
    EXPECT_EQ(stage["total_bytes"].get<Bytes>(), estimate.stages[i].total_bytes);
    EXPECT_EQ(stage["parameter_bytes"].get<Bytes>() + stage["fp8_weight_bytes"].get<Bytes>() +
                  stage["gradient_bytes"].get<Bytes>() + stage["optimizer_bytes"].get<Bytes>() +
                  stage["activation_bytes"].get<Bytes>() + stage["userbuffer_bytes"].get<Bytes>() +
                  stage["workspace_bytes"].get<Bytes>() + stage["context_bytes"].get<Bytes>(),
              stage["total_bytes"].get<Bytes>())
        << "stage " << i << ": the components must add up to the total";
    // Transformer Engine's one cuBLAS workspace on Hopper (no userbuffers, no experts).
    EXPECT_EQ(stage["workspace_bytes"].get<Bytes>(), 33'554'432);
  }
  EXPECT_EQ(doc["worst_stage"].get<std::size_t>(), estimate.worst_stage);
  EXPECT_EQ(doc["device"]["fits"].get<bool>(), estimate.verdict.fits);
  EXPECT_EQ(doc["device"]["margin_bytes"].get<Bytes>(), estimate.verdict.margin_bytes);

  std::istringstream csv(llm_memory_csv(estimate, device));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("stage,layers,", 0), 0u) << line;
  std::size_t rows = 0;
  while (std::getline(csv, line))
    ++rows;
  EXPECT_EQ(rows, estimate.stages.size());
}

TEST(MemoryReportJson, MoeModelsCarryTheirLayersFigure) {
  Case c;
  c.model = shipped_model("qwen3-30b-a3b.json");
  c.parallel.pp = 2;
  c.parallel.dp = 8;
  c.parallel.ep = 8;
  c.parallel.micro_batch = 1;
  const LlmMemoryEstimate estimate = estimate_llm_memory(c.model, c.parallel, {});
  const auto doc = llm_memory_json(c.model, c.parallel, estimate, {});
  EXPECT_EQ(doc["layout"]["ep"].get<int>(), 8);
  EXPECT_EQ(doc["layout"]["etp"].get<int>(), 1);
  EXPECT_EQ(doc["moe_layers"].get<int>(), 48);  // every layer of Qwen3 30B-A3B
  EXPECT_GT(estimate.moe_activation_bytes_per_layer, 0.0);
  EXPECT_DOUBLE_EQ(doc["moe_activation_bytes_per_layer"].get<double>(),
                   estimate.moe_activation_bytes_per_layer);
  // A dense model's document has neither.
  const Case dense = gpt_case();
  const auto dense_doc = llm_memory_json(dense.model, dense.parallel,
                                         estimate_llm_memory(dense.model, dense.parallel, {}), {});
  EXPECT_FALSE(dense_doc.contains("moe_activation_bytes_per_layer"));
  EXPECT_FALSE(dense_doc["layout"].contains("ep"));
}

TEST(MemoryReportJson, UnknownCapacityHasNoVerdict) {
  const Case c = gpt_case();
  DeviceMemory device;  // no capacity
  const LlmMemoryEstimate estimate = estimate_llm_memory(c.model, c.parallel, device);
  const auto doc = llm_memory_json(c.model, c.parallel, estimate, device);
  EXPECT_TRUE(doc["device"]["capacity_bytes"].is_null());
  EXPECT_TRUE(doc["device"]["fits"].is_null());
}

}  // namespace
}  // namespace perfsim::memory
