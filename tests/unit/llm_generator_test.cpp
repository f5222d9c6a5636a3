// The LLM generator's traces against closed forms: Megatron rank layout, 1F1B step counts,
// GEMM FLOPs per rank (Korthikanti et al. 2022, Appendix A, eq. 7 for GPT shapes), collective
// counts and bytes per group, collectives that match across every group, and a pipeline bubble
// that comes out of the schedule: (M + P - 1)(F + B) for P balanced stages and M micro-batches
// (Narayanan et al. 2021, Sec. 2.2.1).
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "generators/llm/llm_flops.hpp"
#include "generators/llm/llm_pipeline_schedule.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "mpi_sim/engine/collective_matching.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "perfsim/error.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_int_attribute;

TransformerConfig tiny_gpt() {
  TransformerConfig model = test_support::tiny_gpt();
  model.attention = AttentionKernel::kUnfused;
  model.dropout = true;
  return model;
}

const Attribute* attribute(const Op& op, std::string_view name) {
  return op.find_attribute(name);
}

// 2 m n k (times the batch) from the operand shapes, checking that the inner sizes agree.
double gemm_flops_from_shapes(const Op& op) {
  if (op.name == "aten::mm" || op.name == "aten::bmm") {
    const auto& a = op.inputs.at(0).shape;
    const auto& b = op.inputs.at(1).shape;
    EXPECT_EQ(a[a.size() - 1], b[b.size() - 2]) << op.name << " op " << op.id;
    double batch = 1;
    for (std::size_t i = 0; i + 2 < a.size(); ++i)
      batch *= static_cast<double>(a[i]);
    return 2.0 * batch * static_cast<double>(a[a.size() - 2]) *
           static_cast<double>(a[a.size() - 1]) * static_cast<double>(b[b.size() - 1]);
  }
  return 0;
}

TEST(LlmParallelConfig, MegatronRankLayoutTensorParallelInnermost) {
  ParallelConfig parallel{.tp = 4, .pp = 2, .dp = 2};
  EXPECT_EQ(rank_of(parallel, {1, 0, 0}), 1);
  EXPECT_EQ(rank_of(parallel, {0, 1, 0}), 4);
  EXPECT_EQ(rank_of(parallel, {0, 0, 1}), 8);
  const std::vector<ProcessGroup> groups = process_groups_of(parallel, 13);  // tp 1, dp 1, pp 1
  ASSERT_EQ(groups.size(), 6u);
  EXPECT_EQ(groups[0].ranks, (std::vector<int>{12, 13, 14, 15}));
  EXPECT_EQ(groups[1].ranks, (std::vector<int>{9, 13}));
  EXPECT_EQ(groups[2].ranks, (std::vector<int>{5, 13}));
  EXPECT_EQ(groups[3].ranks, (std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15}));  // TP x PP
  EXPECT_EQ(groups[4].ranks, (std::vector<int>{5, 13}));  // embedding group: first and last stage
  EXPECT_EQ(groups[5].ranks, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));  // TP x DP
  EXPECT_EQ(all_process_groups(parallel).size(), 4u + 8u + 8u + 2u + 8u + 2u);
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    const RankCoordinates c = coordinates_of(parallel, rank);
    EXPECT_EQ(rank_of(parallel, c), rank);
  }
}

TEST(LlmParallelConfig, RejectsSplitsTheModelCannotTake) {
  TransformerConfig model = tiny_gpt();
  EXPECT_THROW(validate(model, ParallelConfig{.tp = 3}), InputError);          // heads 8
  EXPECT_THROW(validate(model, ParallelConfig{.pp = 3}), InputError);          // layers 8
  EXPECT_THROW(validate(model, ParallelConfig{.dp = 32}), InputError);         // batch 32 / 2
  EXPECT_THROW(validate(model, ParallelConfig{.zero_stage = 4}), InputError);  // ZeRO 0..3
  EXPECT_NO_THROW(validate(model, ParallelConfig{.tp = 8, .pp = 4, .dp = 2}));
}

TEST(LlmPipelineSchedule, OneFOneBWarmupAndCounts) {
  const int stages = 4, micro_batches = 6;
  for (int stage = 0; stage < stages; ++stage) {
    const auto steps = one_f_one_b_schedule(stage, stages, micro_batches);
    std::map<PipelineAction, int> counts;
    for (const PipelineStep& step : steps)
      ++counts[step.action];
    EXPECT_EQ(counts[PipelineAction::kForward], micro_batches);
    EXPECT_EQ(counts[PipelineAction::kBackward], micro_batches);
    EXPECT_EQ(counts[PipelineAction::kRecvForward], stage == 0 ? 0 : micro_batches);
    EXPECT_EQ(counts[PipelineAction::kSendForward], stage == stages - 1 ? 0 : micro_batches);
    EXPECT_EQ(counts[PipelineAction::kRecvBackward], stage == stages - 1 ? 0 : micro_batches);
    EXPECT_EQ(counts[PipelineAction::kSendBackward], stage == 0 ? 0 : micro_batches);
    // Warm-up: stages - stage - 1 forwards before the first backward.
    int forwards_before_backward = 0;
    for (const PipelineStep& step : steps) {
      if (step.action == PipelineAction::kBackward)
        break;
      if (step.action == PipelineAction::kForward)
        ++forwards_before_backward;
    }
    EXPECT_EQ(forwards_before_backward, stages - stage);
  }
}

TEST(LlmFlops, GptShapesMatchKorthikantiEquation7) {
  // Korthikanti et al. 2022, Appendix A, eq. 7: 72 B s l h^2 (1 + s/(6h) + v/(12 h l)).
  TransformerConfig model = tiny_gpt();
  model.seq_len = 2048;
  model.hidden = 12288;
  model.heads = 96;
  model.kv_heads = 96;
  model.ffn_hidden = 4 * 12288;
  model.layers = 96;
  model.vocab = 51200;
  const double B = 64, s = 2048, l = 96, h = 12288, v = 51200;
  const double expected = 72 * B * s * l * h * h * (1 + s / (6 * h) + v / (12 * h * l));
  EXPECT_NEAR(model_flops_per_iteration(model, 64) / expected, 1.0, 1e-12);
}

struct GeneratedCase {
  TransformerConfig model;
  ParallelConfig parallel;
};

std::vector<Trace> generate_all(const GeneratedCase& c) {
  std::vector<Trace> traces;
  for (int rank = 0; rank < c.parallel.world_size(); ++rank)
    traces.push_back(generate_llm_rank(c.model, c.parallel, rank));
  return traces;
}

// Per-rank GEMM FLOPs equal 3 x the forward GEMM FLOPs of the rank's share (backward does a
// data-gradient and a weight-gradient GEMM per forward GEMM), plus one forward for full
// recomputation.
void expect_gemm_flops(const GeneratedCase& c, const std::vector<Trace>& traces) {
  const int micro_batches = micro_batches_per_iteration(c.model, c.parallel);
  const double sequences =
      static_cast<double>(micro_batch_size(c.model, c.parallel)) * micro_batches;
  const int layers_per_stage = c.model.layers / c.parallel.pp;
  const double passes = c.parallel.recompute == Recompute::kFull ? 4 : 3;
  for (const Trace& trace : traces) {
    const RankCoordinates coordinates = coordinates_of(c.parallel, trace.rank);
    double measured = 0;
    double recorded = 0;
    for (const Op& op : trace.ops) {
      measured += gemm_flops_from_shapes(op);
      if (op.name == "aten::mm" || op.name == "aten::bmm")
        recorded += std::get<double>(attribute(op, "flops")->value);
    }
    double expected =
        passes * layers_per_stage * layer_forward_flops(c.model, sequences) / c.parallel.tp;
    if (coordinates.pp == c.parallel.pp - 1)
      expected += 3 * logits_forward_flops(c.model, sequences) / c.parallel.tp;
    if (c.parallel.recompute == Recompute::kSelective) {
      // QK^T and attention over V again: 4 s^2 h per sequence and layer.
      const double s = c.model.seq_len, h = c.model.hidden;
      expected += layers_per_stage * sequences * 4 * s * s * h / c.parallel.tp;
    }
    EXPECT_NEAR(measured / expected, 1.0, 1e-12) << "rank " << trace.rank;
    EXPECT_NEAR(recorded / expected, 1.0, 1e-12) << "rank " << trace.rank;
  }
}

struct GroupTotals {
  std::map<CollectiveKind, int> counts;
  std::map<CollectiveKind, Bytes> bytes_in;
};

std::map<std::string, GroupTotals> totals_by_group_kind(const Trace& trace) {
  std::map<std::string, GroupTotals> totals;
  for (const Op& op : trace.ops) {
    if (!op.comm)
      continue;
    const std::string key =
        is_point_to_point(op.comm->kind)
            ? "p2p"
            : op.comm->process_group.substr(0, op.comm->process_group.find('/'));
    ++totals[key].counts[op.comm->kind];
    totals[key].bytes_in[op.comm->kind] += op.comm->bytes_in;
  }
  return totals;
}

// Collectives match across every group (engine::find_collective_mismatch over all ranks).
void expect_collectives_match(const std::vector<Trace>& traces);

class ConstantKernels final : public KernelDurationSource {
 public:
  // GEMMs inside transformer layers take `layer_gemm_us`; everything else is free, so that
  // the stages are balanced exactly.
  explicit ConstantKernels(DurationUs layer_gemm_us) : layer_gemm_us_(layer_gemm_us) {}
  DurationUs kernel_duration_us(const Op& op, const Kernel& kernel) const override {
    return kernel.category == KernelCategory::kGemm && op_int_attribute(op, "layer") >= 0
               ? layer_gemm_us_
               : 0;
  }
  std::string_view name() const override { return "constant"; }

 private:
  DurationUs layer_gemm_us_;
};

class ConstantCollectives final : public CommDurationSource {
 public:
  explicit ConstantCollectives(DurationUs us) : us_(us) {}
  DurationUs collective_duration_us(const CollectiveCall&) const override { return us_; }
  std::string_view name() const override { return "constant"; }

 private:
  DurationUs us_;
};

std::vector<engine::RankProgram> build_programs(const std::vector<Trace>& traces,
                                                const engine::ProgramSources& sources) {
  std::vector<engine::RankProgram> programs;
  for (const Trace& trace : traces)
    programs.push_back(
        engine::build_rank_program(trace, trace.rank, static_cast<int>(traces.size()), sources));
  return programs;
}

void expect_collectives_match(const std::vector<Trace>& traces) {
  ConstantKernels kernels(1);
  ConstantCollectives collectives(1);
  const auto programs = build_programs(traces, {&kernels, &collectives, {}});
  std::vector<engine::RankSignatures> signatures;
  for (const auto& program : programs)
    signatures.push_back(engine::rank_signatures(program));
  const auto mismatch =
      engine::find_collective_mismatch(signatures, static_cast<int>(traces.size()));
  EXPECT_FALSE(mismatch.has_value()) << *mismatch;
}

std::vector<RankResult> simulate(const std::vector<Trace>& traces, DurationUs layer_gemm_us,
                                 DurationUs collective_us, HostOverheads overheads = {}) {
  ConstantKernels kernels(layer_gemm_us);
  ConstantCollectives collectives(collective_us);
  const auto programs = build_programs(traces, {&kernels, &collectives, {}});
  overheads.launch.kernel_gap_us = 0;
  engine::InProcessClockSync sync;
  std::vector<engine::RankSimulator> simulators;
  for (const auto& program : programs)
    simulators.emplace_back(program, overheads, sync, false);
  engine::run_to_completion(simulators, sync);
  std::vector<RankResult> results;
  for (const auto& simulator : simulators)
    results.push_back(simulator.result());
  return results;
}

TEST(LlmGenerator, TensorParallelTraceClosedForms) {
  GeneratedCase c{tiny_gpt(), ParallelConfig{.tp = 2, .pp = 2, .dp = 2}};
  const auto traces = generate_all(c);
  expect_gemm_flops(c, traces);
  expect_collectives_match(traces);
  const int m = micro_batches_per_iteration(c.model, c.parallel);  // 32 / (2 * 2) = 8
  ASSERT_EQ(m, 8);
  const Bytes hidden_bytes = 128 * 2 * 256 * 2;  // s b h, bf16
  const Bytes token_bytes = 128 * 2 * 4;         // one fp32 per token
  const int layers = 4;
  for (const Trace& trace : traces) {
    const RankCoordinates co = coordinates_of(c.parallel, trace.rank);
    const bool first = co.pp == 0, last = co.pp == 1;
    auto totals = totals_by_group_kind(trace);
    // TP without SP: two all-reduces per layer forward, two backward; the embedding's one
    // (first stage); three cross-entropy reductions and the head's input gradient (last).
    const int tp_all_reduces = m * (4 * layers + (first ? 1 : 0) + (last ? 4 : 0));
    EXPECT_EQ(totals["tp"].counts[CollectiveKind::kAllReduce], tp_all_reduces);
    EXPECT_EQ(totals["tp"].bytes_in[CollectiveKind::kAllReduce],
              m * ((4 * layers + (first ? 1 : 0) + (last ? 1 : 0)) * hidden_bytes +
                   (last ? 3 * token_bytes : 0)));
    // Once per iteration the gradient norm's square (one fp32) over TP x PP, no PP collective.
    EXPECT_EQ(totals["mp"].counts[CollectiveKind::kAllReduce], 1);
    EXPECT_EQ(totals["mp"].bytes_in[CollectiveKind::kAllReduce], 4);
    EXPECT_EQ(totals.count("pp"), 0u);
    EXPECT_EQ(totals["tp"].counts.count(CollectiveKind::kAllGather), 0u);
    // PP: one activation and one gradient per micro-batch across each stage boundary.
    EXPECT_EQ(totals["p2p"].counts[CollectiveKind::kSend], m);
    EXPECT_EQ(totals["p2p"].counts[CollectiveKind::kRecv], m);
    EXPECT_EQ(totals["p2p"].bytes_in[CollectiveKind::kSend], m * hidden_bytes);
    // DP: the stage's fp32 gradients in one all-reduce after the backward (no
    // overlap_grad_reduce), rounded up to a multiple of DP.
    const std::int64_t tp_layer = 256 * (3 * 128) + 128 * 256 + 256 * 512 + 512 * 256 + 2 * 256;
    const std::int64_t params =
        layers * tp_layer + (first ? 1024 * 256 : 0) + (last ? 1024 * 256 + 256 : 0);
    const int buckets = totals["dp"].counts[CollectiveKind::kAllReduce];
    EXPECT_EQ(buckets, 1);
    EXPECT_GE(totals["dp"].bytes_in[CollectiveKind::kAllReduce], params * 4);
    EXPECT_LT(totals["dp"].bytes_in[CollectiveKind::kAllReduce], params * 4 + buckets * 2 * 4);
    // GEMM op counts: 4 mm + 2 bmm per layer forward, twice that backward; the logits' mm
    // forward and two backward.
    int mm = 0, bmm = 0;
    for (const Op& op : trace.ops) {
      mm += op.name == "aten::mm";
      bmm += op.name == "aten::bmm";
    }
    EXPECT_EQ(mm, m * (12 * layers + (last ? 3 : 0)));
    EXPECT_EQ(bmm, m * 6 * layers);
  }
}

TEST(LlmGenerator, SequenceParallelSwapsAllReducesForGatherAndScatter) {
  GeneratedCase c{tiny_gpt(), ParallelConfig{.tp = 4, .pp = 1, .dp = 1, .sequence_parallel = true}};
  const auto traces = generate_all(c);
  expect_gemm_flops(c, traces);
  expect_collectives_match(traces);
  const int m = 16, layers = 8;
  const Bytes local_bytes = 32 * 2 * 256 * 2;  // s/t b h
  for (const Trace& trace : traces) {
    auto totals = totals_by_group_kind(trace)["tp"];
    // Per layer: forward 2 all-gathers + 2 reduce-scatters; backward 2 gradient all-gathers,
    // 2 input all-gathers again for the weight gradients, 2 reduce-scatters. Embedding: 1 RS
    // forward, 1 AG backward; head: 1 AG forward, 1 AG and 1 RS backward, 3 small all-reduces
    // (the gradient norm's is over TP x PP, "mp", the TP group's ranks here).
    EXPECT_EQ(totals.counts[CollectiveKind::kAllGather], m * (6 * layers + 3));
    EXPECT_EQ(totals.counts[CollectiveKind::kReduceScatter], m * (4 * layers + 2));
    EXPECT_EQ(totals.counts[CollectiveKind::kAllReduce], m * 3);
    EXPECT_EQ(totals.bytes_in[CollectiveKind::kAllGather], m * (6 * layers + 3) * local_bytes);
    EXPECT_EQ(totals.bytes_in[CollectiveKind::kReduceScatter],
              m * (4 * layers + 2) * local_bytes * 4);
  }
}

TEST(LlmGenerator, RecomputationAddsForwardWork) {
  for (Recompute recompute : {Recompute::kFull, Recompute::kSelective}) {
    GeneratedCase c{tiny_gpt(), ParallelConfig{.tp = 2, .pp = 2, .dp = 1, .recompute = recompute}};
    const auto traces = generate_all(c);
    expect_gemm_flops(c, traces);
    expect_collectives_match(traces);
  }
}

TEST(LlmGenerator, WaitingForBackwardCollectivesExposesThem) {
  double exposed[2] = {0, 0};
  for (bool overlap : {true, false}) {
    ParallelConfig parallel{.tp = 4, .pp = 1, .dp = 1, .sequence_parallel = true};
    parallel.overlap_tp_backward = overlap;
    GeneratedCase c{tiny_gpt(), parallel};
    const auto traces = generate_all(c);
    expect_gemm_flops(c, traces);
    expect_collectives_match(traces);
    const auto results = simulate(traces, 10, 5);
    exposed[overlap ? 0 : 1] = results[0].groups.at(tp_group_name(parallel, 0)).exposed_us;
  }
  EXPECT_GT(exposed[1], exposed[0]);
}

TEST(LlmGenerator, ZeroStagesReduceScatterAndGather) {
  for (int stage : {1, 2, 3}) {
    GeneratedCase c{tiny_gpt(), ParallelConfig{.tp = 1, .pp = 1, .dp = 4, .zero_stage = stage}};
    const auto traces = generate_all(c);
    expect_gemm_flops(c, traces);
    expect_collectives_match(traces);
    auto kinds = totals_by_group_kind(traces[0]);
    auto totals = kinds["dp"];
    // No DP all-reduce: the gradient norm's square over the sharded gradients is summed over
    // the job's group (here the 4 DP ranks).
    EXPECT_EQ(totals.counts.count(CollectiveKind::kAllReduce), 0u) << "ZeRO " << stage;
    EXPECT_EQ(kinds["dopt"].counts[CollectiveKind::kAllReduce], 1) << "ZeRO " << stage;
    EXPECT_EQ(kinds["dopt"].bytes_in[CollectiveKind::kAllReduce], 4) << "ZeRO " << stage;
    EXPECT_GT(totals.counts[CollectiveKind::kReduceScatter], 0) << "ZeRO " << stage;
    EXPECT_GT(totals.counts[CollectiveKind::kAllGather], 0) << "ZeRO " << stage;
    if (stage == 3) {
      // Every one of the 8 layers gathered before its forward and its backward in each of the
      // 4 micro-batches (32 / (2 x 4)), its gradients reduce-scattered in each; embedding and
      // head gradients in one more bucket.
      EXPECT_EQ(totals.counts[CollectiveKind::kAllGather], 4 * 8 * 2);
      EXPECT_EQ(totals.counts[CollectiveKind::kReduceScatter], 4 * 8 + 1);
    }
  }
}

TEST(LlmGenerator, FlashAttentionGroupedQueryTraceMatches) {
  TransformerConfig model = tiny_gpt();
  model.attention = AttentionKernel::kFlash;
  model.kv_heads = 2;
  model.gated_ffn = true;
  model.dropout = false;
  GeneratedCase c{model, ParallelConfig{.tp = 4, .pp = 2, .dp = 2, .sequence_parallel = true}};
  const auto traces = generate_all(c);
  expect_collectives_match(traces);
  const RankCoordinates co = coordinates_of(c.parallel, 0);
  EXPECT_EQ(co.pp, 0);
  int flash = 0;
  for (const Op& op : traces[0].ops)
    flash += op.name == "aten::_scaled_dot_product_flash_attention";
  EXPECT_EQ(flash, micro_batches_per_iteration(model, c.parallel) * 4);
}

TEST(LlmGenerator, PipelineBubbleEmergesFromTheSchedule) {
  TransformerConfig model = tiny_gpt();
  model.global_batch = 16;  // 8 micro-batches of 2
  const int stages = 4;
  GeneratedCase c{model, ParallelConfig{.tp = 1, .pp = stages, .dp = 1}};
  const auto traces = generate_all(c);
  const DurationUs gemm_us = 10;
  const auto results = simulate(traces, gemm_us, 0);
  // Per stage and micro-batch: 2 layers x 6 GEMMs forward, 12 backward.
  const double forward = 2 * 6 * gemm_us, backward = 2 * 12 * gemm_us;
  const int m = 8;
  double iteration = 0;
  for (const RankResult& result : results)
    iteration = std::max(iteration, result.iteration_us);
  EXPECT_NEAR(iteration, (m + stages - 1) * (forward + backward), 1e-6);
  // Without pipelining the same work takes M (F + B) per stage: the bubble is (P-1)(F+B).
  GeneratedCase flat{model, ParallelConfig{.tp = 1, .pp = 1, .dp = 1}};
  const auto flat_results = simulate(generate_all(flat), gemm_us, 0);
  EXPECT_NEAR(flat_results[0].iteration_us, m * stages * (forward + backward), 1e-6);
}

TEST(LlmGenerator, InterleavedScheduleShrinksTheBubble) {
  const int stages = 4, chunks = 2, m = 8;  // 32 sequences / (2 x DP 2)
  GeneratedCase c{tiny_gpt(),
                  ParallelConfig{.tp = 1, .pp = stages, .dp = 2, .virtual_stages = chunks}};
  const auto traces = generate_all(c);
  expect_gemm_flops(c, traces);
  expect_collectives_match(traces);
  for (int stage = 0; stage < stages; ++stage) {
    int forwards = 0, backwards = 0;
    for (const PipelineStep& step : interleaved_schedule(stage, stages, chunks, m)) {
      forwards += step.action == PipelineAction::kForward;
      backwards += step.action == PipelineAction::kBackward;
    }
    EXPECT_EQ(forwards, m * chunks);
    EXPECT_EQ(backwards, m * chunks);
  }
  const DurationUs gemm_us = 10;
  const auto results = simulate(traces, gemm_us, 0);
  double iteration = 0;
  for (const RankResult& result : results)
    iteration = std::max(iteration, result.iteration_us);
  // Per rank and micro-batch: 2 layers (two chunks of one) x (6 + 12) GEMMs. The bubble of the
  // interleaved schedule is (P - 1)(F + B) / V (Narayanan et al. 2021, Sec. 2.2.2).
  const double work = 2 * 18 * gemm_us;
  EXPECT_NEAR(iteration, m * work + (stages - 1) * work / chunks, 0.02 * m * work);
  EXPECT_LT(iteration, (m + stages - 1) * work);
}

TEST(LlmGenerator, DataParallelBucketsOverlapTheBackwardPass) {
  TransformerConfig model = tiny_gpt();
  // An output layer of its own (untied): the counts below include its weights.
  model.tied_embeddings = false;
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 2, .bucket_bytes = 1'000'000};
  parallel.overlap_grad_reduce = true;
  GeneratedCase c{model, parallel};
  const auto traces = generate_all(c);
  const auto results = simulate(traces, 10, 50);
  // 1 MB buckets: the head's gradients, one per layer (3.1 MB each), the embedding's. Each
  // all-reduce (50 us) hides behind the next layer's backward (12 GEMMs x 10 us); only the
  // two posted after the last layer's backward (layer 0's and the embedding's, back to back
  // on the DP stream) are exposed before the optimizer step.
  const auto& dp = results[0].groups.at(dp_group_name(c.parallel, 0));
  EXPECT_EQ(dp.collectives, 10);
  EXPECT_NEAR(dp.time_us, 10 * 50, 1e-6);
  EXPECT_NEAR(dp.exposed_us, 2 * 50, 1e-6);
}

TEST(LlmGenerator, GradientReductionAfterTheBackwardIsExposed) {
  // Megatron's default (no --overlap-grad-reduce): the stage's gradients in one all-reduce
  // after the schedule; the optimizer waits for all of it (50 us), where with overlap only
  // the two buckets posted after the last layer are exposed (DataParallelBuckets... above).
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 2};
  GeneratedCase c{tiny_gpt(), parallel};
  const auto traces = generate_all(c);
  const auto results = simulate(traces, 10, 50);
  const auto& dp = results[0].groups.at(dp_group_name(c.parallel, 0));
  EXPECT_EQ(dp.collectives, 1);
  EXPECT_NEAR(dp.exposed_us, 50, 1e-6);
  int in_grad_sync = 0;
  for (const Op& op : traces[0].ops) {
    if (op.comm && op.comm->process_group == dp_group_name(c.parallel, 0)) {
      EXPECT_EQ(std::get<std::string>(attribute(op, "phase")->value), "grad-sync");
      ++in_grad_sync;
    }
  }
  EXPECT_EQ(in_grad_sync, 1);
}

TEST(LlmGenerator, ParameterGatherMovesUnderTheFirstForward) {
  for (bool overlap : {false, true}) {
    ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 2, .zero_stage = 1};
    parallel.overlap_grad_reduce = overlap;  // Megatron requires it with the gather overlap
    parallel.overlap_param_gather = overlap;
    const Trace trace = generate_llm_rank(tiny_gpt(), parallel, 0);
    std::size_t first_forward = 0, last_gather = 0, first_gather = trace.ops.size();
    for (std::size_t i = 0; i < trace.ops.size(); ++i) {
      const Op& op = trace.ops[i];
      const Attribute* phase = attribute(op, "phase");
      if (!first_forward && phase && std::get<std::string>(phase->value) == "forward")
        first_forward = i;
      if (op.comm && op.comm->kind == CollectiveKind::kAllGather) {
        first_gather = std::min(first_gather, i);
        last_gather = i;
      }
    }
    if (overlap) {
      EXPECT_LT(last_gather, first_forward);
    } else {
      EXPECT_GT(first_gather, first_forward);
    }
  }
}

TEST(LlmGenerator, GradientClippingAndOptimizerStepOverTheShard) {
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 4, .zero_stage = 1};
  TransformerConfig model = tiny_gpt();
  model.tied_embeddings = false;
  const Trace trace = generate_llm_rank(model, parallel, 0);
  // Parameters of the single stage: 8 layers, embedding and untied head (2048 x 256 each), final
  // norm; the ZeRO-1 shard is a quarter of them.
  const std::int64_t layer = 256 * 768 + 256 * 256 + 256 * 1024 + 1024 * 256 + 2 * 256;
  const std::int64_t shard = (8 * layer + 2 * 2048 * 256 + 256 + 3) / 4;
  int clip_kernels = 0, adam_kernels = 0;
  for (const Op& op : trace.ops) {
    const Attribute* phase = attribute(op, "phase");
    const std::string name = phase ? std::get<std::string>(phase->value) : "";
    if (name == "grad-clip" && !op.comm) {
      ++clip_kernels;
      EXPECT_EQ(op.inputs.at(0).numel, shard) << op.name;
      EXPECT_EQ(op.inputs.at(0).bytes(), shard * 4) << op.name;  // fp32 main grads
    }
    if (name == "optimizer" && !op.comm && op.name != "aten::copy_") {
      ++adam_kernels;
      EXPECT_EQ(op.outputs.at(0).numel, shard) << op.name;
    }
  }
  EXPECT_EQ(clip_kernels, 2);  // the norm, the scaling
  EXPECT_EQ(adam_kernels, 3);  // the three multi-tensor Adam passes
}

TEST(LlmGenerator, UnevenPipelineStages) {
  ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 1};
  parallel.pp_layers = {3, 5};
  EXPECT_EQ(stage_layers(tiny_gpt(), parallel, 0).first, 0);
  EXPECT_EQ(stage_layers(tiny_gpt(), parallel, 0).last, 3);
  EXPECT_EQ(stage_layers(tiny_gpt(), parallel, 1).first, 3);
  EXPECT_EQ(stage_layers(tiny_gpt(), parallel, 1).last, 8);
  // 16 micro-batches; 12 GEMMs per layer and micro-batch, the head's 3 on the last stage.
  for (int stage = 0; stage < 2; ++stage) {
    const Trace trace = generate_llm_rank(tiny_gpt(), parallel, stage);
    int mm = 0;
    for (const Op& op : trace.ops)
      mm += op.name == "aten::mm";
    EXPECT_EQ(
        mm, 16 * (12 * parallel.pp_layers[static_cast<std::size_t>(stage)] + (stage == 1 ? 3 : 0)));
  }
  parallel.pp_layers = {3, 4};
  EXPECT_THROW(validate(tiny_gpt(), parallel), InputError);
  parallel.pp_layers = {8};
  EXPECT_THROW(validate(tiny_gpt(), parallel), InputError);
}

TEST(LlmParallelConfig, ContextParallelRanksBetweenTensorAndData) {
  ParallelConfig parallel{.tp = 2, .pp = 2, .dp = 2, .cp = 2};
  EXPECT_EQ(parallel.world_size(), 16);
  const RankCoordinates c = coordinates_of(parallel, 11);  // 11 = 1 + 2 (1 + 2 (0 + 2 x 1))
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.cp, 1);
  EXPECT_EQ(c.dp, 0);
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(rank_of(parallel, c), 11);
  const auto groups = process_groups_of(parallel, 0);
  ASSERT_EQ(groups.size(), 8u);
  EXPECT_EQ(groups[1].ranks, (std::vector<int>{0, 2, 4, 6}));  // gradients over DP x CP
  EXPECT_EQ(groups[2].ranks, (std::vector<int>{0, 8}));        // pipeline
  EXPECT_EQ(groups[3].ranks, (std::vector<int>{0, 2}));        // context ring
  EXPECT_EQ(groups[4].ranks, (std::vector<int>{0, 1, 2, 3}));  // TP x CP (a MoE router's)
  EXPECT_EQ(groups[5].ranks, (std::vector<int>{0, 1, 8, 9}));  // TP x PP (gradient norm)
  EXPECT_EQ(groups[6].ranks, (std::vector<int>{0, 8}));  // embedding group (first, last stage)
  EXPECT_EQ(groups[7].ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));  // TP x CP x DP (bias)
}

TEST(LlmGenerator, ContextParallelRingAttention) {
  TransformerConfig model = tiny_gpt();
  model.attention = AttentionKernel::kFlash;
  model.dropout = false;
  const int cp = 4;
  GeneratedCase c{model, ParallelConfig{.tp = 1, .pp = 1, .dp = 1, .cp = cp}};
  const auto traces = generate_all(c);
  expect_collectives_match(traces);
  const int m = 16, layers = 8;
  // One K/V chunk of the rank's 128 / 4 tokens: 2 (K, V) x b 2 x 8 heads x 32 x d 32, bf16.
  const Bytes chunk_bytes = 2 * 2 * 8 * 32 * 32 * 2;
  double attention_flops = 0;
  int forward_steps = 0, backward_steps = 0, sends = 0, causal_steps = 0;
  Bytes sent = 0;
  for (const Op& op : traces[1].ops) {
    if (op.name == "aten::_scaled_dot_product_flash_attention") {
      ++forward_steps;
      attention_flops += std::get<double>(attribute(op, "flops")->value);
      // The causal step attends the local 32 tokens to themselves, the others to half a chunk.
      const bool causal = op_int_attribute(op, "is_causal") == 1;
      causal_steps += causal;
      EXPECT_EQ(op.inputs.at(1).shape.at(2), causal ? 32 : 16);
    }
    backward_steps += op.name == "aten::_scaled_dot_product_flash_attention_backward";
    if (op.comm && op.comm->kind == CollectiveKind::kSend) {
      ++sends;
      sent += op.comm->bytes_in;
    }
  }
  EXPECT_EQ(forward_steps, m * layers * cp);
  EXPECT_EQ(backward_steps, m * layers * cp);
  // CP - 1 exchanges forward (K, V) and backward (K, V and their gradients).
  EXPECT_EQ(sends, m * layers * 2 * (cp - 1));
  EXPECT_EQ(sent, m * layers * (cp - 1) * 3 * chunk_bytes);
  EXPECT_EQ(causal_steps, m * layers);
  // Load-balanced causal attention: each rank does 1 / CP of the unmasked half of the whole
  // sequence's attention, 4 b a s^2 d / (2 CP).
  EXPECT_DOUBLE_EQ(attention_flops, m * layers * 4.0 * 2 * 8 * 128 * 128 * 32 / (2 * cp));
  // The exchange runs under the attention: with 10 us kernels and 5 us transfers no rank waits.
  const auto results = simulate(traces, 10, 5);
  for (const auto& [group, traffic] : results[1].groups)
    if (group.rfind("p2p:", 0) == 0) {
      EXPECT_NEAR(traffic.exposed_us, 0, 1e-9) << group;
    }
}

TEST(LlmGenerator, OverlappedParameterGatherFeedsTheFirstForward) {
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 2, .zero_stage = 1};
  parallel.overlap_grad_reduce = true;  // Megatron requires it with the parameter gather overlap
  parallel.overlap_param_gather = true;
  parallel.bucket_bytes = 4 * 1'000'000;  // fp32 gradients: buckets of 1e6 parameters
  const Trace trace = generate_llm_rank(tiny_gpt(), parallel, 0);
  std::set<std::int64_t> gathered;
  int gathers = 0;
  for (const Op& op : trace.ops) {
    if (op.comm && op.comm->kind == CollectiveKind::kAllGather) {
      ++gathers;
      gathered.insert(op.outputs.at(0).tensor_id);  // storages: one parameter buffer
    }
  }
  // Layers of 786,944 parameters (3 x 65,536 QKV, 65,536 projection, 2 x 262,144 MLP, 512
  // norms) after the embedding's 524,288: buckets {embedding, 0}, {1, 2}, {3, 4}, {5, 6} and
  // {7, head}.
  EXPECT_EQ(gathers, 5);
  int first_reads = 0, later_reads = 0, contended = 0;
  for (const Op& op : trace.ops) {
    if (op.name != "aten::mm" || op.inputs.size() < 2 || !gathered.count(op.inputs[1].tensor_id))
      continue;
    (op_int_attribute(op, "micro_batch") == 0 ? first_reads : later_reads)++;
    contended += op.find_attribute("contention_sms") != nullptr;
  }
  EXPECT_EQ(first_reads, 8 * 4);  // the 4 linear GEMMs of every layer's first forward
  EXPECT_EQ(later_reads, 0);
  EXPECT_EQ(contended, 8 * 4);
}

// Megatron-LM's argument checks: the overlapped parameter gather is the distributed optimizer's
// and rides on the overlapped gradient reduce's buckets.
TEST(LlmGenerator, OverlappedParameterGatherNeedsTheDistributedOptimizerAndReduceOverlap) {
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 2, .zero_stage = 1};
  parallel.overlap_param_gather = true;
  parallel.overlap_grad_reduce = true;
  EXPECT_NO_THROW(validate(tiny_gpt(), parallel));
  parallel.overlap_grad_reduce = false;
  try {
    validate(tiny_gpt(), parallel);
    ADD_FAILURE() << "no overlap_grad_reduce accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "overlap_param_gather");
    EXPECT_NE(error.problem().find("overlap_grad_reduce"), std::string::npos) << error.what();
  }
  parallel.overlap_grad_reduce = true;
  parallel.zero_stage = 0;
  try {
    validate(tiny_gpt(), parallel);
    ADD_FAILURE() << "ZeRO 0 accepted";
  } catch (const InputError& error) {
    EXPECT_NE(error.problem().find("distributed optimizer"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace perfsim::generators::llm

namespace perfsim::generators::llm {
namespace {

// get_batch's CPU time (the calibration's per-micro-batch term) is exposed only where the
// framework makes the host wait for the GPU first (Megatron-DeepSpeed's broadcast_data); with
// Megatron-Core's get_batch the CPU loads the next batch while the GPU runs the kernels queued
// before it.
TEST(LlmGenerator, GetBatchHostWaitOnlyWhereTheFrameworkSynchronizes) {
  const DurationUs load_us = 300;
  HostOverheads overheads;
  overheads.per_op[std::string(kLoadBatchOpName)].t5 = {load_us, 0.0, 1};
  double iteration_us[2] = {0, 0};
  int micro_batches = 0;
  for (const bool sync : {false, true}) {
    GeneratedCase c{tiny_gpt(), ParallelConfig{.tp = 1, .pp = 1, .dp = 1}};
    c.parallel.batch_load_sync = sync;
    const auto traces = generate_all(c);
    micro_batches = micro_batches_per_iteration(c.model, c.parallel);
    int loads = 0;
    for (const Op& op : traces[0].ops) {
      if (op.name != kLoadBatchOpName)
        continue;
      ++loads;
      EXPECT_TRUE(op.kernels.empty());
      ASSERT_EQ(op.runtime_calls.size(), sync ? 1u : 0u);
      if (sync) {
        EXPECT_EQ(op.runtime_calls[0].name, "cudaStreamSynchronize");
      }
    }
    EXPECT_EQ(loads, micro_batches);
    // Each micro-batch: 4 layers x (forward 4 + backward 8) GEMMs of 10 us, far more than 300 us.
    iteration_us[sync] = simulate(traces, 10, 0, overheads)[0].iteration_us;
  }
  ASSERT_GT(micro_batches, 1);
  // Without the wait only the first load is exposed (nothing queued before it); with it,
  // every load waits for the GPU to drain and then holds it idle.
  EXPECT_NEAR(iteration_us[1] - iteration_us[0], (micro_batches - 1) * load_us, 1e-6);
}

}  // namespace
}  // namespace perfsim::generators::llm
