// A stage template compiled as the generator streams it, one pipeline step at a time
// (scenario/llm_stage_compiler.hpp), must be the program compiled from the whole instantiated
// trace: the same ops op by op (bodies, which ops share a body, trace positions, collectives with
// the buffers later ops wait on), the same pipeline steps, coverage, witness collectives and
// collective witnesses; on every parallelism kind (support/parallelism_layouts.hpp). The
// streamed generator hands over the collected template's ops, in order, never two
// micro-batches' ops in one step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "scenario/folded_simulation.hpp"
#include "scenario/llm_pipeline_steps.hpp"
#include "scenario/llm_simulation.hpp"
#include "scenario/llm_stage_compiler.hpp"
#include "support/layout_scenario.hpp"
#include "support/parallelism_layouts.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

void expect_same_kernel(const engine::SimKernel& a, const engine::SimKernel& b,
                        const std::string& where) {
  EXPECT_EQ(a.name, b.name) << where;
  EXPECT_EQ(a.stream, b.stream) << where;
  EXPECT_EQ(a.category, b.category) << where;
  EXPECT_EQ(a.duration_us, b.duration_us) << where;  // exact
  EXPECT_EQ(a.launch_api, b.launch_api) << where;
  EXPECT_EQ(a.is_collective, b.is_collective) << where;
  EXPECT_EQ(a.host_waits, b.host_waits) << where;
  EXPECT_EQ(a.recorded_launch_offset_us, b.recorded_launch_offset_us) << where;
  EXPECT_EQ(a.recorded_launch_us, b.recorded_launch_us) << where;
}

void expect_same_op(const engine::SimOp& a, const engine::SimOp& b, const std::string& where) {
  EXPECT_EQ(a.name, b.name) << where;
  ASSERT_EQ(a.kernels.size(), b.kernels.size()) << where;
  for (std::size_t k = 0; k < a.kernels.size(); ++k)
    expect_same_kernel(a.kernels[k], b.kernels[k], where + " kernel " + std::to_string(k));
  EXPECT_EQ(a.waits_for_communication, b.waits_for_communication) << where;
  EXPECT_EQ(a.waits_for_seq, b.waits_for_seq) << where;
  EXPECT_EQ(a.host_sync, b.host_sync) << where;
  EXPECT_EQ(a.queued_before_trace, b.queued_before_trace) << where;
  EXPECT_EQ(a.continues_previous, b.continues_previous) << where;
  EXPECT_EQ(a.continued_by_next, b.continued_by_next) << where;
  EXPECT_EQ(a.measured_start_us, b.measured_start_us) << where;
  EXPECT_EQ(a.consumed_tensor_ids, b.consumed_tensor_ids) << where;
  EXPECT_EQ(a.recorded_host == nullptr, b.recorded_host == nullptr) << where;
  ASSERT_EQ(a.collective == nullptr, b.collective == nullptr) << where;
  if (!a.collective)
    return;
  EXPECT_EQ(a.collective_index, b.collective_index) << where;
  const engine::SimCollective& x = *a.collective;
  const engine::SimCollective& y = *b.collective;
  EXPECT_EQ(x.comm.kind, y.comm.kind) << where;
  EXPECT_EQ(x.comm.process_group, y.comm.process_group) << where;
  EXPECT_EQ(x.comm.peer_rank, y.comm.peer_rank) << where;
  EXPECT_EQ(x.comm.bytes_in, y.comm.bytes_in) << where;
  EXPECT_EQ(x.comm.bytes_out, y.comm.bytes_out) << where;
  EXPECT_EQ(x.group, y.group) << where;
  EXPECT_EQ(x.index_in_group, y.index_in_group) << where;
  EXPECT_EQ(x.members, y.members) << where;
  EXPECT_EQ(x.duration_us, y.duration_us) << where;  // exact
  EXPECT_EQ(x.combine, y.combine) << where;
  EXPECT_EQ(x.stream, y.stream) << where;
  // Filled by later ops as they consume the buffers: by the last step, not the collective's.
  EXPECT_EQ(x.produced_tensor_ids, y.produced_tensor_ids) << where;
  EXPECT_EQ(x.seq, y.seq) << where;
}

void expect_streamed_like_whole(const LlmScenario& scenario, int rank) {
  const SimulationInputs priced = load_llm_inputs(scenario, {rank});
  const engine::ProgramSources sources{priced.kernel_source.get(), priced.comm_source.get(), {}};
  const int stage = llm::coordinates_of(scenario.parallel, rank).pp;
  const std::string where_rank = "rank " + std::to_string(rank);

  // The whole-trace path: template, witnesses, instantiated trace, program, steps.
  const llm::StageTemplate stage_template =
      llm::generate_llm_stage_template(scenario.model, scenario.parallel, stage);
  WitnessCollector collector(stage_template.trace, stage_template.stage);
  std::vector<int> witness_of;
  for (const Op& op : stage_template.trace.ops)
    witness_of.push_back(collector.observe(op));
  const llm::StageTemplate witnesses = collector.take();
  const Trace trace = llm::instantiate_llm_rank(stage_template, scenario.parallel, rank);
  engine::RankProgram whole =
      engine::build_rank_program(trace, rank, scenario.parallel.world_size(), sources);
  mark_pipeline_steps(trace, scenario.model, scenario.parallel, stage, whole);

  const CompiledStageTemplate streamed =
      compile_stage_template(scenario.model, scenario.parallel, rank, sources);
  const engine::RankProgram& program = streamed.program;

  EXPECT_EQ(program.sim_rank, whole.sim_rank);
  EXPECT_EQ(program.world_size, whole.world_size);
  EXPECT_EQ(program.source, whole.source);
  ASSERT_EQ(program.ops.size(), whole.ops.size()) << where_rank;
  EXPECT_EQ(program.ops.distinct_ops(), whole.ops.distinct_ops()) << where_rank;
  for (std::size_t i = 0; i < whole.ops.size(); ++i) {
    const std::string where = where_rank + " op " + std::to_string(i);
    ASSERT_EQ(program.ops.trace_position(i), whole.ops.trace_position(i)) << where;
    ASSERT_EQ(program.ops.body_index(i), whole.ops.body_index(i)) << where;
    expect_same_op(program.ops[i], whole.ops[i], where);
    if (testing::Test::HasFailure())
      return;  // one difference says enough
  }
  EXPECT_EQ(program.coverage.top_level_ops, whole.coverage.top_level_ops);
  EXPECT_EQ(program.coverage.ops_without_kernels, whole.coverage.ops_without_kernels);
  EXPECT_EQ(program.coverage.kernels, whole.coverage.kernels);
  EXPECT_EQ(program.coverage.collectives, whole.coverage.collectives);
  EXPECT_EQ(program.coverage.unmodelled_ops, whole.coverage.unmodelled_ops);

  ASSERT_EQ(program.steps.size(), whole.steps.size()) << where_rank;
  EXPECT_FALSE(whole.steps.empty()) << where_rank;  // the schedule was recognized
  for (std::size_t s = 0; s < whole.steps.size(); ++s) {
    EXPECT_EQ(program.steps[s].first_op, whole.steps[s].first_op) << where_rank << " step " << s;
    EXPECT_EQ(program.steps[s].end_op, whole.steps[s].end_op) << where_rank << " step " << s;
    EXPECT_EQ(program.steps[s].label.phase, whole.steps[s].label.phase);
    EXPECT_EQ(program.steps[s].label.micro_batch, whole.steps[s].label.micro_batch);
    EXPECT_EQ(program.steps[s].label.chunk, whole.steps[s].label.chunk);
  }

  EXPECT_EQ(streamed.witnesses.stage, witnesses.stage);
  EXPECT_EQ(streamed.witnesses.trace.source, witnesses.trace.source);
  ASSERT_EQ(streamed.witnesses.trace.ops.size(), witnesses.trace.ops.size()) << where_rank;
  for (std::size_t w = 0; w < witnesses.trace.ops.size(); ++w) {
    const Op& a = streamed.witnesses.trace.ops[w];
    const Op& b = witnesses.trace.ops[w];
    EXPECT_EQ(a.id, b.id) << "witness " << w;
    ASSERT_TRUE(a.comm && b.comm) << "witness " << w;
    EXPECT_EQ(a.comm->process_group, b.comm->process_group) << "witness " << w;  // placeholder
    EXPECT_EQ(a.comm->peer_rank, b.comm->peer_rank) << "witness " << w;
    EXPECT_EQ(a.comm->bytes_in, b.comm->bytes_in) << "witness " << w;
  }

  // Each collective's witness, as read off the whole template.
  ASSERT_NE(streamed.role_of, nullptr) << where_rank;
  std::vector<std::uint32_t> expected_roles;
  for (std::size_t i = 0; i < whole.ops.size(); ++i) {
    if (whole.ops[i].collective)
      expected_roles.push_back(
          static_cast<std::uint32_t>(witness_of.at(whole.ops.trace_position(i))));
  }
  EXPECT_EQ(*streamed.role_of, expected_roles) << where_rank;
}

class StageCompilerOfEveryKind : public testing::TestWithParam<test_support::ParallelismLayout> {};

TEST_P(StageCompilerOfEveryKind, StreamedCompileEqualsWholeTraceCompile) {
  const LlmScenario scenario = test_support::layout_scenario(GetParam().parallel);
  // The first and the last stage (embedding, loss), and a rank that is not its stage's first.
  const int world = scenario.parallel.world_size();
  std::set<int> ranks{0, world - 1};
  ranks.insert(llm::rank_of(scenario.parallel, {scenario.parallel.tp - 1, 0, 0, 0}));
  for (const int rank : ranks) {
    expect_streamed_like_whole(scenario, rank);
    if (HasFailure())
      return;
  }
}

INSTANTIATE_TEST_SUITE_P(LlmStageCompiler, StageCompilerOfEveryKind,
                         testing::ValuesIn(test_support::parallelism_layouts()),
                         [](const auto& info) { return info.param.name; });

// Records what the generator hands over.
class RecordingSink : public llm::TraceSink {
 public:
  void begin(const Trace& header) override {
    ++begins;
    EXPECT_TRUE(ops.empty()) << "begin after ops";
    source = header.source;
    header_ops = header.ops.size();
  }
  void take(std::vector<Op>& batch, std::size_t first_position) override {
    EXPECT_EQ(first_position, ops.size());
    std::set<std::int64_t> micro_batches;
    for (const Op& op : batch) {
      if (const Attribute* mb = op.find_attribute("micro_batch"))
        micro_batches.insert(std::get<std::int64_t>(mb->value));
    }
    largest_micro_batch_count = std::max(largest_micro_batch_count, micro_batches.size());
    largest_batch = std::max(largest_batch, batch.size());
    ++batches;
    for (Op& op : batch)
      ops.push_back(std::move(op));
  }
  int begins = 0;
  std::string source;
  std::size_t header_ops = 0;
  std::vector<Op> ops;
  std::size_t batches = 0;
  std::size_t largest_batch = 0;
  std::size_t largest_micro_batch_count = 0;
};

TEST(LlmStageCompiler, StreamedTemplateHandsOverTheCollectedOpsOneStepAtATime) {
  llm::ParallelConfig parallel = test_support::tp_pp_dp(2, 2, 2);
  parallel.virtual_stages = 1;
  const LlmScenario scenario = test_support::layout_scenario(parallel);
  const int micro_batches = llm::micro_batches_per_iteration(scenario.model, parallel);
  ASSERT_GE(micro_batches, 4);
  for (int stage = 0; stage < parallel.pp; ++stage) {
    const llm::StageTemplate collected =
        llm::generate_llm_stage_template(scenario.model, parallel, stage);
    RecordingSink sink;
    llm::generate_llm_stage_template(scenario.model, parallel, stage, sink);
    EXPECT_EQ(sink.begins, 1);
    EXPECT_EQ(sink.header_ops, 0u);
    EXPECT_EQ(sink.source, collected.trace.source);
    ASSERT_EQ(sink.ops.size(), collected.trace.ops.size());
    for (std::size_t i = 0; i < sink.ops.size(); ++i) {
      ASSERT_EQ(sink.ops[i].id, collected.trace.ops[i].id) << "op " << i;
      ASSERT_EQ(sink.ops[i].name, collected.trace.ops[i].name) << "op " << i;
      ASSERT_EQ(sink.ops[i].attributes.size(), collected.trace.ops[i].attributes.size());
      ASSERT_EQ(sink.ops[i].inputs.size(), collected.trace.ops[i].inputs.size());
      ASSERT_EQ(sink.ops[i].comm.has_value(), collected.trace.ops[i].comm.has_value());
    }
    // A forward and a backward per micro-batch at least, and never two micro-batches at once.
    EXPECT_GE(sink.batches, 2u * static_cast<std::size_t>(micro_batches));
    EXPECT_LE(sink.largest_micro_batch_count, 1u) << "stage " << stage;
    EXPECT_LE(sink.largest_batch * static_cast<std::size_t>(micro_batches), sink.ops.size())
        << "stage " << stage;
  }
}

}  // namespace
}  // namespace perfsim::scenario
