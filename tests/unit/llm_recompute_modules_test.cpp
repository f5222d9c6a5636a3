// Megatron-Core's granular selective recompute (--recompute-modules, issue 15) in the LLM
// generator and the memory closed form: the names and their errors, the default list
// (core_attn) leaving the trace byte for byte as it was, the exact ops each module runs again
// per layer and micro-batch, and that each module lowers the activations kept and raises the
// iteration time against core_attn alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cereal/archives/binary.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_recompute_modules.hpp"
#include "memory/llm_memory.hpp"
#include "perfsim/error.hpp"
#include "perfsim/trace_serialization.hpp"
#include "support/free_collectives.hpp"
#include "support/generated_llm_iteration.hpp"
#include "support/op_phase.hpp"
#include "support/small_moe.hpp"
#include "support/tiny_llm.hpp"
#include "support/unit_duration_run.hpp"
#include "validation/run_table.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_int_attribute;
using test_support::op_phase;

using test_support::tiny_mla;

// The same with every layer a MoE layer (4 experts of 256, top 2).
TransformerConfig tiny_mla_moe() {
  TransformerConfig model = tiny_mla();
  model.moe.num_experts = 4;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = 256;
  return model;
}

// The names of the ops of (layer 0, micro-batch 0, phase), in trace order.
std::vector<std::string> layer_op_names(const Trace& trace, const std::string& in_phase) {
  std::vector<std::string> names;
  for (const Op& op : trace.ops)
    if (op_int_attribute(op, "layer") == 0 && op_int_attribute(op, "micro_batch") == 0 &&
        op_phase(op) == in_phase)
      names.push_back(op.comm ? "comm:" + std::string(collective_name(op.comm->kind)) : op.name);
  return names;
}

ParallelConfig selective(const std::string& modules, ParallelConfig parallel = {}) {
  parallel.recompute = Recompute::kSelective;
  parallel.recompute_modules = parse_recompute_modules(modules, "<test>", "recompute_modules");
  return parallel;
}

std::string serialized(const Trace& trace) {
  std::ostringstream stream;
  {
    cereal::BinaryOutputArchive archive(stream);
    archive(trace);
  }
  return stream.str();
}

TEST(RecomputeModules, NamesSeparatorsAndDefault) {
  EXPECT_TRUE(parse_recompute_modules("", "f", "c").is_default());
  EXPECT_TRUE(parse_recompute_modules("core_attn", "f", "c").is_default());
  const RecomputeModules both = parse_recompute_modules("layernorm moe_act", "f", "c");
  EXPECT_FALSE(both.core_attn);  // a list replaces Megatron's default
  EXPECT_TRUE(both.layernorm);
  EXPECT_TRUE(both.moe_act);
  EXPECT_EQ(parse_recompute_modules("layernorm+moe_act", "f", "c"), both);
  EXPECT_EQ(parse_recompute_modules("layernorm,moe_act", "f", "c"), both);
  EXPECT_EQ(recompute_modules_name(both), "layernorm+moe_act");
  EXPECT_EQ(recompute_modules_name(parse_recompute_modules("mla_up_proj,core_attn", "f", "c")),
            "core_attn+mla_up_proj");
  const RecomputeModules mlp = parse_recompute_modules("mlp,mla_up_proj", "f", "c");
  EXPECT_TRUE(mlp.mlp);
  EXPECT_FALSE(mlp.is_default());
  EXPECT_EQ(recompute_modules_name(mlp), "mla_up_proj+mlp");
}

TEST(RecomputeModules, UnknownAndUnmodelledNamesAreNamedErrors) {
  for (const char* text : {"routed_experts", "core_attention", "layernorm,bogus"}) {
    try {
      parse_recompute_modules(text, "runs.csv line 3", "recompute_modules");
      ADD_FAILURE() << text << " accepted";
    } catch (const InputError& error) {
      EXPECT_EQ(error.file(), "runs.csv line 3");
      EXPECT_EQ(error.location(), "recompute_modules");
      const std::string name = std::string(text).substr(std::string(text).find(',') + 1);
      EXPECT_NE(error.problem().find("\"" + name + "\""), std::string::npos) << error.what();
    }
  }
}

TEST(RecomputeModules, RunsCsvColumnTakesSpacesOrPlusAndNamesABadCell) {
  const validation::RunTable table = validation::parse_run_table(
      "name,model,gpus,tp,pp,dp,micro_batch,global_batch,recompute,recompute_modules,device,"
      "topology,"
      "measured_iteration_s\n"
      "a,gpt-oss-120b,8,1,1,8,1,8,selective,layernorm moe_act,H100-SXM,hgx-h100,1\n"
      "b,gpt-oss-120b,8,1,1,8,1,8,selective,layernorm+moe_act,H100-SXM,hgx-h100,1\n"
      "c,gpt-oss-120b,8,1,1,8,1,8,selective,,H100-SXM,hgx-h100,1\n"
      "d,gpt-oss-120b,8,1,1,8,1,8,selective,routed_experts,H100-SXM,hgx-h100,1\n",
      "runs.csv");
  ASSERT_EQ(table.rows.size(), 4u);
  for (int row : {0, 1, 2})
    EXPECT_TRUE(table.rows[static_cast<std::size_t>(row)].error.empty())
        << table.rows[static_cast<std::size_t>(row)].error;
  EXPECT_EQ(table.rows[0].recompute_modules, "layernorm moe_act");
  EXPECT_NE(table.rows[3].error.find("recompute_modules"), std::string::npos);
  EXPECT_NE(table.rows[3].error.find("\"routed_experts\""), std::string::npos)
      << table.rows[3].error;
}

TEST(RecomputeModules, NeedSelectiveRecomputeAndTheirModule) {
  ParallelConfig parallel = selective("layernorm");
  parallel.recompute = Recompute::kFull;
  EXPECT_THROW(validate(test_support::tiny_moe(), parallel), InputError);
  EXPECT_THROW(validate(test_support::tiny_gpt(), selective("moe_act")), InputError);
  EXPECT_THROW(validate(test_support::tiny_moe(), selective("mla_up_proj")), InputError);
  EXPECT_NO_THROW(validate(test_support::tiny_moe(), selective("layernorm,moe_act")));
  EXPECT_NO_THROW(validate(tiny_mla(), selective("mla_up_proj")));
}

TEST(RecomputeModules, DefaultListLeavesTheTraceByteForByte) {
  const TransformerConfig model = test_support::tiny_moe();
  ParallelConfig parallel = test_support::tiny_tp2_pp2_dp2();
  parallel.recompute = Recompute::kSelective;
  ParallelConfig listed = parallel;
  listed.recompute_modules = parse_recompute_modules("core_attn", "<test>", "");
  for (int rank : {0, 5}) {
    const Trace before = generate_llm_rank(model, parallel, rank);
    const Trace after = generate_llm_rank(model, listed, rank);
    EXPECT_EQ(before.ops.size(), after.ops.size());
    EXPECT_EQ(serialized(before), serialized(after)) << "rank " << rank;
  }
}

// Per layer and micro-batch, in the backward: exactly the module's forward ops again.
TEST(RecomputeModules, LayernormRecomputesTheMoePreMlpNorm) {
  const TransformerConfig model = test_support::tiny_moe();
  const Trace trace = generate_llm_rank(model, selective("layernorm"), 0);
  EXPECT_EQ(layer_op_names(trace, "recompute"),
            std::vector<std::string>{"aten::native_layer_norm"});
  // A dense layer's norms are fused into TELayerNormColumnParallelLinear: none recomputed.
  EXPECT_TRUE(layer_op_names(generate_llm_rank(test_support::tiny_gpt(), selective("layernorm"), 0),
                             "recompute")
                  .empty());
  // An MLA MoE layer: the input norm too (a TENorm before the down projections).
  EXPECT_EQ(
      layer_op_names(generate_llm_rank(tiny_mla_moe(), selective("layernorm"), 0), "recompute"),
      (std::vector<std::string>{"aten::native_layer_norm", "aten::native_layer_norm"}));
}

TEST(RecomputeModules, MoeActRecomputesTheExpertActivation) {
  TransformerConfig model = test_support::small_moe(2, 8);  // gated experts
  EXPECT_EQ(layer_op_names(generate_llm_rank(model, selective("moe_act"), 0), "recompute"),
            std::vector<std::string>{"megatron::bias_swiglu"});
  model.bias_swiglu_fusion = false;  // PyTorch's sigmoid and two multiplies
  EXPECT_EQ(layer_op_names(generate_llm_rank(model, selective("moe_act"), 0), "recompute"),
            (std::vector<std::string>{"aten::sigmoid", "aten::mul", "aten::mul"}));
  EXPECT_EQ(layer_op_names(generate_llm_rank(test_support::tiny_moe(), selective("moe_act"), 0),
                           "recompute"),
            std::vector<std::string>{"aten::gelu"});  // an ungated expert FFN
}

TEST(RecomputeModules, MlaUpProjRecomputesNormsGathersUpProjectionsAndRope) {
  ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true};
  const Trace trace = generate_llm_rank(tiny_mla(), selective("mla_up_proj", parallel), 0);
  // The latent norms, their SP all-gathers (k_pe is kept gathered), the up GEMMs, fused rope.
  EXPECT_EQ(layer_op_names(trace, "recompute"),
            (std::vector<std::string>{"aten::native_layer_norm", "comm:all_gather",
                                      "aten::native_layer_norm", "comm:all_gather", "aten::mm",
                                      "aten::mm", "megatron::fused_mla_rope_q",
                                      "megatron::fused_mla_rope_kv"}));
  // The backward itself is unchanged.
  const Trace plain = generate_llm_rank(tiny_mla(), selective("", parallel), 0);
  EXPECT_EQ(layer_op_names(trace, "backward"), layer_op_names(plain, "backward"));
  EXPECT_EQ(layer_op_names(trace, "forward"), layer_op_names(plain, "forward"));
  // Every rank's collectives still match (the recomputed gathers run on every TP rank).
  test_support::expect_runs_to_completion(
      test_support::generate_every_rank(tiny_mla(), selective("mla_up_proj", parallel)));
}

// mlp: a dense layer's whole MLP again, its TP collectives included, before the MLP's
// backward; the forward and the backward themselves unchanged; MoE layers untouched.
TEST(RecomputeModules, MlpRecomputesTheWholeDenseMlp) {
  ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true};
  const TransformerConfig gpt = test_support::tiny_gpt();
  const Trace trace = generate_llm_rank(gpt, selective("core_attn,mlp", parallel), 0);
  EXPECT_EQ(layer_op_names(trace, "recompute"),
            (std::vector<std::string>{"aten::native_layer_norm", "comm:all_gather", "aten::mm",
                                      "aten::gelu", "aten::mm", "comm:reduce_scatter"}));
  const Trace plain = generate_llm_rank(gpt, selective("core_attn", parallel), 0);
  EXPECT_EQ(layer_op_names(trace, "backward"), layer_op_names(plain, "backward"));
  EXPECT_EQ(layer_op_names(trace, "forward"), layer_op_names(plain, "forward"));
  test_support::expect_runs_to_completion(
      test_support::generate_every_rank(gpt, selective("core_attn,mlp", parallel)));
  // Without TP: no collectives; a MoE layer: nothing (Megatron checkpoints no MoELayer).
  EXPECT_EQ(
      layer_op_names(generate_llm_rank(gpt, selective("mlp"), 0), "recompute"),
      (std::vector<std::string>{"aten::native_layer_norm", "aten::mm", "aten::gelu", "aten::mm"}));
  EXPECT_TRUE(
      layer_op_names(generate_llm_rank(test_support::tiny_moe(), selective("mlp"), 0), "recompute")
          .empty());
}

// shared_experts: a MoE layer's shared experts again (TP all-gather, FC1, activation, FC2, their
// reduction) before their backward; nothing when they run beside the dispatcher
// (moe_shared_expert_overlap), as in Megatron-Core's MoELayer.
TEST(RecomputeModules, SharedExpertsRecomputeTheSharedMlp) {
  TransformerConfig model = test_support::small_moe(2, 8);
  model.moe.shared_expert_ffn_hidden = 512;
  ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 2, .ep = 2, .sequence_parallel = true};
  const Trace trace = generate_llm_rank(model, selective("shared_experts", parallel), 0);
  EXPECT_EQ(layer_op_names(trace, "recompute"),
            (std::vector<std::string>{"comm:all_gather", "aten::mm", "megatron::bias_swiglu",
                                      "aten::mm", "comm:reduce_scatter"}));
  const Trace plain = generate_llm_rank(model, selective("", parallel), 0);
  EXPECT_EQ(layer_op_names(trace, "backward"), layer_op_names(plain, "backward"));
  EXPECT_EQ(layer_op_names(trace, "forward"), layer_op_names(plain, "forward"));
  test_support::expect_runs_to_completion(
      test_support::generate_every_rank(model, selective("shared_experts", parallel)));
  ParallelConfig overlapped = selective("shared_experts", parallel);
  overlapped.moe_shared_expert_overlap = true;
  EXPECT_TRUE(layer_op_names(generate_llm_rank(model, overlapped, 0), "recompute").empty());
  EXPECT_EQ(memory::estimate_llm_memory(model, overlapped, {}).stages.at(0).activation_bytes,
            memory::estimate_llm_memory(model, selective("", overlapped), {})
                .stages.at(0)
                .activation_bytes);
}

// moe: the whole MoE block again before its backward: the same ops as its forward (router,
// permute, all-to-alls, grouped GEMMs, combine, shared experts); refused with the all-to-all
// overlap, whose combined steps split the block.
TEST(RecomputeModules, MoeRecomputesTheWholeBlock) {
  TransformerConfig model = test_support::small_moe(2, 8);
  model.moe.shared_expert_ffn_hidden = 512;
  ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 2, .ep = 2, .sequence_parallel = true};
  const Trace trace = generate_llm_rank(model, selective("layernorm,moe", parallel), 0);
  const Trace plain = generate_llm_rank(model, selective("layernorm", parallel), 0);
  std::vector<std::string> recomputed = layer_op_names(trace, "recompute");
  const std::vector<std::string> forward = layer_op_names(plain, "forward");
  auto count = [](const std::vector<std::string>& names, const std::string& name) {
    return std::count(names.begin(), names.end(), name);
  };
  EXPECT_EQ(count(recomputed, "comm:all_to_all"), count(forward, "comm:all_to_all"));
  EXPECT_EQ(count(recomputed, "te::grouped_gemm"), 2);
  EXPECT_EQ(count(recomputed, "aten::native_layer_norm"), 1);  // layernorm's, first
  EXPECT_EQ(recomputed.front(), "aten::native_layer_norm");
  EXPECT_EQ(layer_op_names(trace, "backward"), layer_op_names(plain, "backward"));
  test_support::expect_runs_to_completion(
      test_support::generate_every_rank(model, selective("moe", parallel)));
  ParallelConfig overlapped = selective("moe", parallel);
  overlapped.moe_a2a_overlap = true;
  EXPECT_THROW(validate(model, overlapped), InputError);
}

double activations(const TransformerConfig& model, const ParallelConfig& parallel) {
  return static_cast<double>(
      memory::estimate_llm_memory(model, parallel, {}).stages.at(0).activation_bytes);
}

TimestampUs iteration_us(const TransformerConfig& model, const ParallelConfig& parallel) {
  test_support::UnitKernels kernels;
  test_support::FreeCollectives collectives;
  HostOverheads overheads;
  return test_support::slowest_generated_iteration_us(model, parallel, {&kernels, &collectives, {}},
                                                      overheads);
}

TransformerConfig small_moe_with_shared() {
  TransformerConfig model = test_support::small_moe(2, 8);
  model.moe.shared_expert_ffn_hidden = 512;
  return model;
}

TEST(RecomputeModules, EachModuleKeepsLessAndTakesLongerThanCoreAttnAlone) {
  struct Case {
    TransformerConfig model;
    std::string modules;
  };
  ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true};
  for (const Case& c :
       {Case{test_support::small_moe(2, 8), "core_attn,layernorm"},
        Case{test_support::small_moe(2, 8), "core_attn,moe_act"},
        Case{test_support::small_moe(2, 8), "core_attn,layernorm,moe_act"},
        Case{tiny_mla(), "core_attn,mla_up_proj"}, Case{tiny_mla_moe(), "core_attn,layernorm"},
        Case{test_support::tiny_gpt(), "core_attn,mlp"}, Case{tiny_mla(), "core_attn,mlp"},
        Case{small_moe_with_shared(), "core_attn,shared_experts"},
        Case{small_moe_with_shared(), "core_attn,moe"}}) {
    SCOPED_TRACE(c.modules + " on " + c.model.name);
    const ParallelConfig base = selective("core_attn", parallel);
    const ParallelConfig more = selective(c.modules, parallel);
    EXPECT_LT(activations(c.model, more), activations(c.model, base));
    EXPECT_GT(iteration_us(c.model, more), iteration_us(c.model, base));
  }
}

}  // namespace
}  // namespace perfsim::generators::llm
