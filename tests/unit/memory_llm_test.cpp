// Closed-form LLM memory (llm_memory.hpp) for the 22B and 175B models of
// shared/data/llm/korthikanti2022.csv. Activation figures reproduce Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models", Table 2 (per-layer
// activation memory) and Sec. 4.2.3 (pipeline in-flight micro-batches, interleaving factor);
// model states follow Megatron-LM's table of bytes per parameter (Megatron Core developer guide,
// "Distributed Optimizer": bf16 weights 2 + fp32 main grads 4 + fp32 master weights and Adam
// moments 12 = 18, with the distributed optimizer 6 + 12/d), ZeRO (Rajbhandari et al. 2020)
// Sec. 3.1's 2 + 2 + 12 with 16-bit gradients.
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "generators/llm/llm_parallel_config.hpp"
#include "memory/llm_memory.hpp"
#include "perfsim/error.hpp"
#include "support/csv_rows.hpp"

namespace perfsim::memory {
namespace {

const std::string kCsv = std::string(PERFSIM_SHARED_DATA_DIR) + "/llm/korthikanti2022.csv";
constexpr Bytes kContextBytes = 400LL * 1024 * 1024;

// The table3_table5_model row of `model`, column name -> text.
std::map<std::string, std::string> model_row(const std::string& model) {
  for (const auto& row : testing::read_csv_rows(kCsv)) {
    if (row.count("record") && row.at("record") == "table3_table5_model" && row.count("model") &&
        row.at("model") == model)
      return row;
  }
  ADD_FAILURE() << kCsv << " has no table3_table5_model row for " << model;
  return {};
}

namespace llm = generators::llm;

// The model and the published layout of a CSV row: GPT shapes (FFN 4h, multi-head attention),
// unfused attention with dropout as in Megatron-LM 2022, bf16.
struct Layout {
  llm::TransformerConfig model;
  llm::ParallelConfig parallel;
};

Layout config_of(const std::string& model) {
  const auto row = model_row(model);
  auto number = [&](const char* column) { return std::stoi(row.at(column)); };
  Layout config;
  config.model.name = model;
  config.model.layers = number("num_layers");
  config.model.hidden = number("hidden_size");
  config.model.heads = number("attention_heads");
  config.model.kv_heads = config.model.heads;
  config.model.ffn_hidden = 4 * config.model.hidden;
  config.model.seq_len = number("seq_len");
  config.model.micro_batch = number("micro_batch_size");
  config.model.global_batch = number("global_batch_size");
  config.model.vocab = number("vocab_size");
  config.model.dtype = DType::kBFloat16;
  config.model.attention = llm::AttentionKernel::kUnfused;
  config.model.dropout = true;
  config.parallel.tp = number("tensor_parallel");
  config.parallel.pp = number("pipeline_parallel");
  config.parallel.dp = number("data_parallel");
  return config;
}

DeviceMemory a100_80gb() {
  DeviceMemory device;
  device.name = "A100-80GB";
  device.capacity_bytes = 80'000'000'000;  // hbm_capacity_bytes of configs/devices/A100-80GB
  device.context_bytes = kContextBytes;
  return device;
}

TEST(LlmMemory, Table2ActivationsPerLayerFor22B) {
  Layout config = config_of("22B");
  ASSERT_EQ(config.model.hidden, 6144);
  ASSERT_EQ(config.model.micro_batch, 4);
  // s = 2048, b = 4, h = 6144, a = 64, t = 8: sbh = 50,331,648 and 5as/h = 320/3.
  const double sbh = 2048.0 * 4 * 6144;
  config.parallel.tp = 1;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel),
                   sbh * (34 + 5.0 * 64 * 2048 / 6144));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel), 7'079'985'152.0);
  config.parallel.tp = 8;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel),
                   sbh * (10 + 24.0 / 8 + 5.0 * 64 * 2048 / (6144 * 8)));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel), 1'325'400'064.0);
  config.parallel.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel),
                   884'998'144.0);  // sbh(34/t + 5as/ht)
  config.parallel.recompute = llm::Recompute::kSelective;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel),
                   34 * sbh / 8);  // 213,909,504
  config.parallel.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel),
                   sbh * (10 + 24.0 / 8));
  config.parallel.recompute = llm::Recompute::kFull;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel),
                   2 * sbh);  // 100,663,296
}

TEST(LlmMemory, FlashAttentionStoresNoScores) {
  // Flash attention keeps the s x s scores, softmax and dropout mask on chip: Table 2 without
  // the 5as/(ht) term, i.e. the selective-recompute rows.
  Layout config = config_of("22B");
  config.model.attention = llm::AttentionKernel::kFlash;
  const double sbh = 2048.0 * 4 * 6144;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel),
                   sbh * (10 + 24.0 / 8));
  config.parallel.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(config.model, config.parallel), 34 * sbh / 8);
}

TEST(LlmMemory, ModelStatesFor22BOnOneStage) {
  Layout config = config_of("22B");
  ASSERT_EQ(config.parallel.pp, 1);
  const LlmMemoryEstimate estimate =
      estimate_llm_memory(config.model, config.parallel, a100_80gb());
  ASSERT_EQ(estimate.stages.size(), 1u);
  // Per layer on one of t = 8 ranks: (12h^2 + 7h)/8 + 6h with h = 6144.
  const double h = 6144;
  const double per_layer = (12 * h * h + 7 * h) / 8 + 6 * h;  // 56,666,112
  EXPECT_DOUBLE_EQ(parameters_per_layer(config.model, config.parallel), per_layer);
  // 48 layers + word embedding vh/t + position embedding sh + final layer norm 2h.
  const double parameters = 48 * per_layer + 51200 * h / 8 + 2048 * h + 2 * h;
  const StageMemory& stage = estimate.stages[0];
  EXPECT_DOUBLE_EQ(stage.parameter_count, parameters);
  EXPECT_EQ(stage.parameter_bytes, static_cast<Bytes>(2 * parameters));
  EXPECT_EQ(stage.gradient_bytes, static_cast<Bytes>(4 * parameters));  // fp32 main grads
  EXPECT_EQ(stage.optimizer_bytes, static_cast<Bytes>(12 * parameters));
  // One stage: one micro-batch in flight. 48 layers of sbh(10 + 24/t + 5as/(ht)), the 1-byte
  // input dropout mask sbh, and the output layer 4sbh/t (1 + v/h).
  const double sbh = 2048.0 * 4 * 6144;
  const double activations = 48 * 1'325'400'064.0 + sbh + 4 * sbh / 8 * (1 + 51200.0 / 6144);
  EXPECT_NEAR(static_cast<double>(stage.activation_bytes), activations, 1.0);
  // 50 GB of model states + 64 GB of activations: the baseline does not fit in 80 GB ...
  EXPECT_FALSE(estimate.verdict.fits);
  // ... with sequence parallelism and selective recompute (34sbh/t per layer) it does.
  config.parallel.sequence_parallel = true;
  config.parallel.recompute = llm::Recompute::kSelective;
  const LlmMemoryEstimate reduced = estimate_llm_memory(config.model, config.parallel, a100_80gb());
  EXPECT_NEAR(static_cast<double>(reduced.stages[0].activation_bytes),
              48 * (34 * sbh / 8) + sbh / 8 + 4 * sbh / 8 * (1 + 51200.0 / 6144), 1.0);
  EXPECT_TRUE(reduced.verdict.fits);
}

TEST(LlmMemory, PublishedLayoutOf175BFitsOnA100_80GB) {
  // TP = 8, PP = 8, interleaved with 3 virtual stages, SP and selective recompute, 64
  // micro-batches of 1 (global batch 64, DP = 1): the "present work" row of the CSV.
  Layout config = config_of("175B");
  ASSERT_EQ(config.parallel.tp, 8);
  ASSERT_EQ(config.parallel.pp, 8);
  ASSERT_EQ(llm::micro_batches_per_iteration(config.model, config.parallel), 64);
  config.parallel.virtual_stages = 3;
  config.parallel.sequence_parallel = true;
  config.parallel.recompute = llm::Recompute::kSelective;
  const LlmMemoryEstimate estimate =
      estimate_llm_memory(config.model, config.parallel, a100_80gb());
  ASSERT_EQ(estimate.stages.size(), 8u);
  EXPECT_EQ(estimate.worst_stage, 0u);

  const double h = 12288;
  const double per_layer = (12 * h * h + 7 * h) / 8 + 6 * h;  // 226,576,896
  const double parameters = 12 * per_layer + 51200 * h / 8 + 2048 * h;
  const StageMemory& first = estimate.stages[0];
  EXPECT_DOUBLE_EQ(first.parameter_count, parameters);  // 2,822,731,776
  EXPECT_EQ(first.parameter_bytes + first.gradient_bytes + first.optimizer_bytes,
            static_cast<Bytes>(18 * parameters));  // 50,809,171,968
  // p = 8 micro-batches in flight times 1 + (p-1)/(pm) = 31/24: 31/3.
  EXPECT_DOUBLE_EQ(first.microbatches_in_flight, 8 * (1 + 7.0 / 24));
  const double sbh = 2048.0 * 1 * h;
  const double activations = 12 * (34 * sbh / 8) * 31 / 3 + sbh / 8 * 31 / 3;
  EXPECT_NEAR(static_cast<double>(first.activation_bytes), activations, 2.0);  // 13,294,895,104
  EXPECT_EQ(first.total_bytes, 50'809'171'968 + 13'294'895'104 + kContextBytes);
  EXPECT_TRUE(estimate.verdict.fits);
  EXPECT_EQ(estimate.verdict.margin_bytes, 80'000'000'000 - first.total_bytes);

  // The last stage holds one micro-batch (times 31/24), the output layer and the tied
  // embedding copy.
  const StageMemory& last = estimate.stages[7];
  EXPECT_DOUBLE_EQ(last.parameter_count, 12 * per_layer + 2 * h + 51200 * h / 8);
  EXPECT_NEAR(static_cast<double>(last.activation_bytes),
              12 * (34 * sbh / 8) * 31 / 24 + 4 * sbh / 8 * (1 + 51200 / h), 2.0);
}

TEST(LlmMemory, TensorParallelOnlyLayoutOf175BIsOutOfMemory) {
  Layout config = config_of("175B");
  config.parallel.pp = 1;
  config.parallel.sequence_parallel = true;
  config.parallel.recompute = llm::Recompute::kSelective;
  const LlmMemoryEstimate estimate =
      estimate_llm_memory(config.model, config.parallel, a100_80gb());
  const double h = 12288;
  const double parameters =
      96 * ((12 * h * h + 7 * h) / 8 + 6 * h) + 51200 * h / 8 + 2048 * h + 2 * h;
  const StageMemory& only = estimate.stages.at(0);
  EXPECT_EQ(only.parameter_bytes + only.gradient_bytes + only.optimizer_bytes,
            static_cast<Bytes>(18 * parameters));  // about 393 GB of model states
  EXPECT_FALSE(estimate.verdict.fits);
  EXPECT_LT(estimate.verdict.margin_bytes, -250'000'000'000);
  EXPECT_EQ(estimate.verdict.margin_bytes, 80'000'000'000 - only.total_bytes);
  const std::string text = format_llm_memory(config.model, config.parallel, estimate, a100_80gb());
  EXPECT_NE(text.find("OUT OF MEMORY"), std::string::npos) << text;
}

TEST(LlmMemory, ZeroStagesShardModelStatesAcrossDataParallelRanks) {
  Layout config = config_of("22B");
  config.parallel.dp = 4;
  config.parallel.global_batch = 16;  // one micro-batch of 4 per data-parallel rank
  const double parameters =
      estimate_llm_memory(config.model, config.parallel, a100_80gb()).stages[0].parameter_count;
  const Bytes p = static_cast<Bytes>(parameters);
  auto states = [&](int zero) {
    config.parallel.zero_stage = zero;
    const StageMemory stage =
        estimate_llm_memory(config.model, config.parallel, a100_80gb()).stages[0];
    return std::array<Bytes, 3>{stage.parameter_bytes, stage.gradient_bytes, stage.optimizer_bytes};
  };
  // fp32 main grads (the default): Megatron's 18 bytes per parameter, 6 + 12/d with the
  // distributed optimizer (ZeRO 1); ZeRO 2 also shards the 4-byte gradients, ZeRO 3 the weights.
  EXPECT_EQ(states(0), (std::array<Bytes, 3>{2 * p, 4 * p, 12 * p}));
  EXPECT_EQ(states(1), (std::array<Bytes, 3>{2 * p, 4 * p, 3 * p}));
  EXPECT_EQ(states(2), (std::array<Bytes, 3>{2 * p, p, 3 * p}));
  EXPECT_EQ(states(3), (std::array<Bytes, 3>{p / 2, p, 3 * p}));
  // bf16 gradients (--grad-reduce-dtype bf16): ZeRO's 2 + 2 + 12.
  config.parallel.gradient_dtype = DType::kBFloat16;
  EXPECT_EQ(states(0), (std::array<Bytes, 3>{2 * p, 2 * p, 12 * p}));
  EXPECT_EQ(states(1), (std::array<Bytes, 3>{2 * p, 2 * p, 3 * p}));
  EXPECT_EQ(states(2), (std::array<Bytes, 3>{2 * p, p / 2, 3 * p}));
  EXPECT_EQ(states(3), (std::array<Bytes, 3>{p / 2, p / 2, 3 * p}));
}

TEST(LlmMemory, RejectsLayoutsThatDoNotDivideTheModel) {
  Layout config = config_of("175B");
  config.parallel.pp = 7;
  try {
    estimate_llm_memory(config.model, config.parallel, a100_80gb());
    FAIL() << "96 layers over 7 stages was accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "pp");
  }
  config.parallel.pp = 1;
  config.parallel.zero_stage = 4;
  EXPECT_THROW(estimate_llm_memory(config.model, config.parallel, a100_80gb()), InputError);
}

TEST(LlmMemory, MegatronBytesPerParameterBySingleStageHandCount) {
  // One stage of a small GPT (L 2, h 64, v 128, s 32, t 1): per layer 12h^2 + 13h = 49,984
  // parameters, plus the word embedding vh = 8,192, the position embedding sh = 2,048 and the
  // final layer norm 2h = 128: P = 2 x 49,984 + 10,368 = 110,336.
  llm::TransformerConfig model;
  model.layers = 2;
  model.hidden = 64;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 256;
  model.vocab = 128;
  model.seq_len = 32;
  model.micro_batch = 1;
  model.global_batch = 4;
  llm::ParallelConfig parallel;
  parallel.dp = 4;
  parallel.vocab_divisible_by = 1;
  constexpr Bytes kParameters = 110'336;
  auto model_states = [&] {
    const StageMemory stage = estimate_llm_memory(model, parallel, a100_80gb()).stages.at(0);
    EXPECT_DOUBLE_EQ(stage.parameter_count, static_cast<double>(kParameters));
    return stage.parameter_bytes + stage.gradient_bytes + stage.optimizer_bytes;
  };
  // bf16 weights, fp32 main grads, fp32 master weights + Adam m, v: 2 + 4 + 12 = 18 B.
  EXPECT_EQ(model_states(), 1'986'048);  // 18 x 110,336
  // Distributed optimizer over d = 4: 6 + 12/4 = 9 B.
  parallel.zero_stage = 1;
  EXPECT_EQ(model_states(), 993'024);  // 9 x 110,336
  // ZeRO 2 shards the fp32 gradients too: 2 + (4 + 12)/4 = 6 B; ZeRO 3 the weights: 18/4.
  parallel.zero_stage = 2;
  EXPECT_EQ(model_states(), 662'016);  // 6 x 110,336
  parallel.zero_stage = 3;
  EXPECT_EQ(model_states(), 496'512);  // 4.5 x 110,336
  // FP8 keeps bf16 weights and the same fp32 main grads (its FP8 copies are counted apart).
  model.dtype = DType::kFloat8;
  parallel.zero_stage = 1;
  EXPECT_EQ(model_states(), 993'024);
  // fp16 gradients (Megatron's default for fp16 training): 2 + 2 + 12 = 16 B, 4 + 12/4 = 7 B
  // with the distributed optimizer.
  model.dtype = DType::kFloat16;
  parallel.gradient_dtype = DType::kFloat16;
  parallel.zero_stage = 0;
  EXPECT_EQ(model_states(), 1'765'376);  // 16 x 110,336
  parallel.zero_stage = 1;
  EXPECT_EQ(model_states(), 772'352);  // 7 x 110,336
}

TEST(LlmMemory, TextNamesTheGradientDtypeItCounts) {
  const Layout config = config_of("22B");
  llm::ParallelConfig parallel = config.parallel;
  const std::string fp32 =
      format_llm_memory(config.model, parallel,
                        estimate_llm_memory(config.model, parallel, a100_80gb()), a100_80gb());
  EXPECT_NE(fp32.find(" grads=fp32"), std::string::npos) << fp32;
  parallel.gradient_dtype = DType::kBFloat16;
  const std::string bf16 =
      format_llm_memory(config.model, parallel,
                        estimate_llm_memory(config.model, parallel, a100_80gb()), a100_80gb());
  EXPECT_NE(bf16.find(" grads=bf16"), std::string::npos) << bf16;
}

}  // namespace
}  // namespace perfsim::memory
