// overlap_param_gather with MoE layers (issue 15): Megatron-Core keeps a MoE layer's local
// experts in expert buffers of their own, sharded over the expert-DP group (DP x CP x TP /
// (EP x ETP) ranks), the other parameters in the dense buffers sharded over DP x CP. With the
// distributed optimizer and overlap_param_gather each chain of buckets is all-gathered ahead
// of the first forward, each over its own communicator. Counted by hand on a 2-layer case, then
// through the engine: the exposed all-gather time falls against the run that gathers after the
// optimizer step.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "planner/layout_enumerator.hpp"
#include "scenario/llm_simulation.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/op_phase.hpp"
#include "support/small_moe.hpp"
#include "support/tiny_llm.hpp"
#include "topology/topology.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

// test_support::tiny_moe with an output layer of its own (untied): the element counts below
// include its weights.
TransformerConfig tiny_moe() {
  TransformerConfig model = test_support::tiny_moe();
  model.tied_embeddings = false;
  return model;
}

// tiny_moe per MoE layer: QKV 64 x 192, projection 64 x 64, two norms, router 64 x 4.
constexpr std::int64_t kDenseElements = 64 * 192 + 64 * 64 + 2 * 64 + 64 * 4;
// Per local expert: 64 x 128 + 128 x 64.
constexpr std::int64_t kExpertElements = 64 * 128 + 128 * 64;
// The single stage's embedding (128 x 64), LM head (128 x 64) and final norm (64).
constexpr std::int64_t kEmbeddingElements = 128 * 64 + 128 * 64 + 64;

struct Gather {
  std::string group;
  int group_size = 0;
  StreamId stream = 0;
  Bytes bytes_out = 0;
  std::size_t index = 0;  // in the trace
};

// The parameter all-gathers: on the data-parallel streams (the MoE dispatcher's token-count
// all-gathers run on the EP / TP streams).
std::vector<Gather> gathers(const Trace& trace) {
  std::vector<Gather> out;
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    if (!op.comm || op.comm->kind != CollectiveKind::kAllGather)
      continue;
    const StreamId stream = op.kernels.at(0).stream;
    if (stream == kDataParallelStream || stream == kExpertDataParallelStream)
      out.push_back({op.comm->process_group, op.comm->group_size, op.kernels.at(0).stream,
                     op.comm->bytes_out, i});
  }
  return out;
}

std::size_t first_forward(const Trace& trace) {
  for (std::size_t i = 0; i < trace.ops.size(); ++i)
    if (op_phase(trace.ops[i]) == "forward")
      return i;
  return trace.ops.size();
}

ParallelConfig dp4_ep2(bool overlap) {
  // DP 4, EP 2: expert-DP 2, two local experts per rank; ZeRO 1 (distributed optimizer).
  ParallelConfig parallel{.dp = 4, .ep = 2, .zero_stage = 1};
  parallel.overlap_grad_reduce = true;
  parallel.overlap_param_gather = overlap;
  return parallel;
}

TEST(LlmMoeParamGather, NoLongerRefused) {
  EXPECT_NO_THROW(validate(tiny_moe(), dp4_ep2(true)));
}

TEST(LlmMoeParamGather, DenseOverDataParallelExpertsOverExpertDataParallel) {
  const Trace trace = generate_llm_rank(tiny_moe(), dp4_ep2(true), 0);
  const std::vector<Gather> all = gathers(trace);
  // One bucket each at Megatron's default bucket size (40M parameters).
  ASSERT_EQ(all.size(), 2u);
  const std::int64_t dense = kEmbeddingElements + 2 * kDenseElements;
  const std::int64_t dense_padded = (dense + 3) / 4 * 4;  // 4 shards of ceil(dense / 4)
  EXPECT_EQ(all[0].group.rfind("dp/", 0), 0u) << all[0].group;
  EXPECT_EQ(all[0].group_size, 4);
  EXPECT_EQ(all[0].stream, kDataParallelStream);
  EXPECT_EQ(all[0].bytes_out, dense_padded * 2);  // bf16 parameters
  EXPECT_EQ(all[1].group.rfind("edp/", 0), 0u) << all[1].group;
  EXPECT_EQ(all[1].group_size, 2);
  EXPECT_EQ(all[1].stream, kExpertDataParallelStream);
  EXPECT_EQ(all[1].bytes_out, 2 * 2 * kExpertElements * 2);  // 2 layers x 2 local experts
  // Both ahead of the first forward, none after the optimizer.
  const std::size_t forward = first_forward(trace);
  for (const Gather& gather : all)
    EXPECT_LT(gather.index, forward);
}

TEST(LlmMoeParamGather, SameBytesPerGroupAsTheGatherAfterTheOptimizer) {
  auto bytes_by_group = [](bool overlap) {
    std::map<std::string, Bytes> bytes;
    for (const Gather& gather : gathers(generate_llm_rank(tiny_moe(), dp4_ep2(overlap), 0)))
      bytes[gather.group.substr(0, gather.group.find('/'))] += gather.bytes_out;
    return bytes;
  };
  const std::map<std::string, Bytes> off = bytes_by_group(false);
  EXPECT_EQ(off.size(), 2u);
  EXPECT_EQ(bytes_by_group(true), off);
  // Without overlap every gather follows the first forward (after the optimizer step).
  const Trace trace = generate_llm_rank(tiny_moe(), dp4_ep2(false), 0);
  for (const Gather& gather : gathers(trace))
    EXPECT_GT(gather.index, first_forward(trace));
}

TEST(LlmMoeParamGather, BucketsPerChainAndFirstForwardReadsThem) {
  ParallelConfig parallel = dp4_ep2(true);
  // fp32 main gradients: buckets of 2 x kExpertElements parameters, one layer's local experts.
  parallel.bucket_bytes = 4 * 2 * kExpertElements;
  const Trace trace = generate_llm_rank(tiny_moe(), parallel, 0);
  std::vector<Gather> dense, experts;
  for (const Gather& gather : gathers(trace))
    (gather.group.rfind("edp/", 0) == 0 ? experts : dense).push_back(gather);
  // Experts: one bucket per layer. Dense: embedding + layers 0 and 1 (8192 + 2 x 16768 =
  // 41728 >= 32768), then the head and final norm.
  ASSERT_EQ(experts.size(), 2u);
  ASSERT_EQ(dense.size(), 2u);
  for (const Gather& gather : experts)
    EXPECT_EQ(gather.bytes_out, 2 * kExpertElements * 2);
  EXPECT_EQ(dense[0].bytes_out, (128 * 64 + 2 * kDenseElements + 3) / 4 * 4 * 2);
  EXPECT_EQ(dense[1].bytes_out, (128 * 64 + 64 + 3) / 4 * 4 * 2);
  // The first micro-batch's expert GEMMs read the gathered experts (each layer its own
  // bucket), later micro-batches' the parameter buffer; the dense GEMMs read the dense bucket.
  std::map<std::int64_t, int> expert_gather_of;  // the gathers' output tensors
  for (std::size_t i = 0; i < experts.size(); ++i)
    expert_gather_of[trace.ops[experts[i].index].outputs.at(0).tensor_id] = static_cast<int>(i);
  const std::int64_t dense_output = trace.ops[dense[0].index].outputs.at(0).tensor_id;
  std::map<int, int> expert_reads_per_bucket;
  int dense_reads = 0;
  for (const Op& op : trace.ops) {
    if (op_phase(op) != "forward")
      continue;
    for (const TensorRef& input : op.inputs) {
      if (const auto found = expert_gather_of.find(input.tensor_id);
          found != expert_gather_of.end())
        ++expert_reads_per_bucket[found->second];
      dense_reads += input.tensor_id == dense_output;
    }
  }
  EXPECT_EQ(expert_reads_per_bucket.size(), 2u);
  EXPECT_GT(expert_reads_per_bucket[0], 0);
  EXPECT_EQ(expert_reads_per_bucket[0], expert_reads_per_bucket[1]);
  EXPECT_GT(dense_reads, 0);
}

TEST(LlmMoeParamGather, WholeExpertsPerRankGatherNothingOverExpertDataParallel) {
  // DP 4, EP 4: expert-DP 1, every rank holds its one expert whole.
  ParallelConfig parallel = dp4_ep2(true);
  parallel.ep = 4;
  const std::vector<Gather> all = gathers(generate_llm_rank(tiny_moe(), parallel, 0));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].group.rfind("dp/", 0), 0u);
}

TEST(LlmMoeParamGather, ExpertBucketsDoNotSpanModelChunks) {
  // PP 2 x VP 2 of 4 MoE layers: one layer per chunk. Megatron keeps each model chunk's
  // buffers apart, so each chunk's experts are a bucket of their own however large the bucket
  // size; EP all-to-all overlap (combined 1F1B steps) on top.
  TransformerConfig model = test_support::small_moe(4, 16);
  ParallelConfig parallel{.pp = 2, .dp = 4, .ep = 2, .zero_stage = 1};
  parallel.virtual_stages = 2;
  parallel.overlap_grad_reduce = true;
  parallel.overlap_param_gather = true;
  parallel.moe_a2a_overlap = true;
  for (int stage = 0; stage < 2; ++stage) {
    const Trace trace = generate_llm_stage_template(model, parallel, stage).trace;
    int expert_gathers = 0;
    for (const Gather& gather : gathers(trace))
      expert_gathers += gather.stream == kExpertDataParallelStream;
    EXPECT_EQ(expert_gathers, 2) << "stage " << stage;
  }
}

TEST(LlmMoeParamGather, PlannerEnumeratesMoeLayoutsWithIt) {
  // `plan --overlap-param-gather` used to skip every MoE layout; now each layout with the
  // distributed optimizer carries the switch and, as Megatron requires, the overlapped gradient
  // reduce, with expert parallelism among them (MLA and MTP models stay skipped: refused).
  planner::EnumerationLimits limits;
  limits.gpus = 8;
  limits.gpus_per_node = 8;
  limits.max_virtual_stages = 1;
  limits.overlap_param_gather = true;
  TransformerConfig model = tiny_moe();
  model.global_batch = 8;
  std::set<int> expert_degrees;
  const std::vector<ParallelConfig> layouts = planner::enumerate_layouts(model, limits);
  for (const ParallelConfig& layout : layouts) {
    EXPECT_EQ(layout.overlap_param_gather, layout.zero_stage > 0);
    EXPECT_EQ(layout.overlap_grad_reduce, layout.zero_stage > 0);
    if (layout.overlap_param_gather)
      expert_degrees.insert(layout.ep);
  }
  EXPECT_FALSE(layouts.empty());
  EXPECT_GT(expert_degrees.count(4), 0u);
}

}  // namespace
}  // namespace perfsim::generators::llm

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

struct GatherRun {
  double iteration_us = 0;
  double exposed_gather_us = 0;  // mean over ranks
};

// The time a rank's compute stream is idle while one of its parameter all-gathers (ZeRO 1: the
// only all-gathers on the data-parallel and expert data-parallel streams) is in flight: the
// union of the gathers' intervals less the compute kernels inside it.
double exposed_gather_us(const RankResult& result) {
  std::vector<std::pair<double, double>> gathers;
  for (const TimelineSlice& slice : result.timeline)
    if ((slice.lane == llm::kDataParallelStream || slice.lane == llm::kExpertDataParallelStream) &&
        slice.name.find("AllGather") != std::string::npos)
      gathers.emplace_back(slice.start_us, slice.start_us + slice.duration_us);
  std::sort(gathers.begin(), gathers.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& interval : gathers) {
    if (!merged.empty() && interval.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, interval.second);
    else
      merged.push_back(interval);
  }
  double exposed = 0;
  for (const auto& [from, to] : merged) {
    double busy = 0;
    for (const TimelineSlice& slice : result.timeline)
      if (slice.lane == kDefaultComputeStream && slice.collective_key.empty())
        busy += std::max(
            0.0, std::min(to, slice.start_us + slice.duration_us) - std::max(from, slice.start_us));
    exposed += (to - from) - busy;
  }
  return exposed;
}

GatherRun simulate(const llm::ParallelConfig& parallel) {
  llm::TransformerConfig model = test_support::small_moe(4, 16);
  model.moe.shared_expert_ffn_hidden = 1024;
  const LlmScenario scenario = test_support::h100_sxm_scenario(
      model, parallel,
      topology::load_topology(std::string(PERFSIM_SOURCE_DIR) +
                              "/configs/topologies/hgx-h100-2node.json"),
      true);
  std::vector<int> ranks(static_cast<std::size_t>(parallel.world_size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  const SimulationInputs inputs = load_llm_inputs(scenario, ranks);
  engine::InProcessClockSync sync;
  const std::vector<RankResult> results =
      engine::simulate_programs(inputs.programs, inputs.overheads, sync, true);
  GatherRun run;
  for (const RankResult& result : results) {
    run.iteration_us = std::max(run.iteration_us, result.iteration_us);
    run.exposed_gather_us += exposed_gather_us(result) / static_cast<double>(results.size());
  }
  return run;
}

// Through the engine, all 16 ranks (no hang, every group's collectives match): the parameter
// all-gathers move under the first forward, so the compute stream waits less for them and the
// iteration is faster; under the interleaved schedule with EP all-to-all overlap too.
TEST(LlmMoeParamGatherSimulation, ExposedGatherTimeFalls) {
  llm::ParallelConfig plain{
      .tp = 2, .pp = 2, .dp = 4, .ep = 2, .sequence_parallel = true, .zero_stage = 1};
  plain.overlap_grad_reduce = true;
  llm::ParallelConfig interleaved = plain;
  interleaved.virtual_stages = 2;
  interleaved.moe_a2a_overlap = true;
  for (llm::ParallelConfig parallel : {plain, interleaved}) {
    SCOPED_TRACE("virtual stages " + std::to_string(parallel.virtual_stages));
    parallel.overlap_param_gather = false;
    const GatherRun off = simulate(parallel);
    parallel.overlap_param_gather = true;
    const GatherRun on = simulate(parallel);
    std::cout << "virtual stages " << parallel.virtual_stages << ": iteration " << off.iteration_us
              << " -> " << on.iteration_us << " us, exposed parameter all-gather "
              << off.exposed_gather_us << " -> " << on.exposed_gather_us << " us per rank\n";
    EXPECT_GT(off.exposed_gather_us, 0);
    EXPECT_LT(on.exposed_gather_us, off.exposed_gather_us);
    EXPECT_LT(on.iteration_us, off.iteration_us);
  }
}

}  // namespace
}  // namespace perfsim::scenario
