// Generated traces written as PyTorch execution traces (trace_io/execution_trace_writer.hpp)
// and read back by the execution-trace loader: same ops, shapes, collectives, groups and rank,
// and the same simulated iteration when the kernel models price both.
#include <gtest/gtest.h>

#include <sstream>

#include "devices/device_spec.hpp"
#include "generators/dlrm/dlrm_config.hpp"
#include "generators/dlrm/dlrm_rank_generator.hpp"
#include "generators/dlrm/dlrm_sharders.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "kernels/model_duration_source.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "support/tiny_llm.hpp"
#include "trace_io/execution_trace_loader.hpp"
#include "trace_io/execution_trace_writer.hpp"

namespace perfsim {
namespace {

using generators::llm::ParallelConfig;
using generators::llm::TransformerConfig;

Trace round_trip(const Trace& trace) {
  std::ostringstream out;
  write_execution_trace(trace, out);
  return load_execution_trace(
      io::InputBytes{"rank" + std::to_string(trace.rank) + ".json", std::move(out).str()});
}

std::vector<const Op*> working_ops(const Trace& trace) {
  std::vector<const Op*> ops;
  for (std::size_t position : trace.top_level_positions())
    ops.push_back(&trace.ops[position]);
  return ops;
}

class ConstantCollectives final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall& call) const override {
    return 20.0 + static_cast<double>(call.comm->bytes_in) * 1e-4;
  }
  std::string_view name() const override { return "test-linear"; }
};

double simulated_iteration_us(const std::vector<Trace>& traces, bool expand) {
  const devices::DeviceSpec device = devices::load_device_file(std::string(PERFSIM_SOURCE_DIR) +
                                                               "/configs/devices/A100-80GB.json");
  kernels::ModelDurationSource model{kernels::KernelPredictor(device)};
  ConstantCollectives collectives;
  engine::ProgramSources sources{&model, &collectives, {}};
  if (expand) {
    sources.expand_kernels = [&model](const Trace& trace, std::size_t position) {
      std::vector<engine::ExpandedKernel> kernels;
      for (const auto& planned : model.expand_kernels(trace.ops[position], trace).kernels)
        kernels.push_back({planned.kernel, planned.predicted_us});
      return kernels;
    };
  }
  std::vector<engine::RankProgram> programs;
  for (const Trace& trace : traces) {
    programs.push_back(
        engine::build_rank_program(trace, trace.rank, static_cast<int>(traces.size()), sources));
  }
  HostOverheads overheads;
  overheads.launch.kernel_gap_us = 1.0;
  engine::InProcessClockSync sync;
  double iteration_us = 0;
  for (const RankResult& result : engine::simulate_programs(programs, overheads, sync))
    iteration_us = std::max(iteration_us, result.iteration_us);
  return iteration_us;
}

TEST(ExecutionTraceWriter, GeneratedRanksReadBackWithTheSameOpsAndCollectives) {
  const TransformerConfig model = test_support::tiny_llama();
  const ParallelConfig parallel = test_support::tiny_tp2_pp2_dp2();
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    const Trace generated = generators::llm::generate_llm_rank(model, parallel, rank);
    const Trace loaded = round_trip(generated);
    EXPECT_EQ(loaded.rank, rank);
    EXPECT_EQ(loaded.world_size, parallel.world_size());
    EXPECT_EQ(loaded.format, std::string("pytorch-et/") + kWrittenEtSchema);
    const auto original_ops = working_ops(generated);
    const auto loaded_ops = working_ops(loaded);
    ASSERT_EQ(loaded_ops.size(), original_ops.size()) << "rank " << rank;
    int collectives = 0;
    for (std::size_t i = 0; i < original_ops.size(); ++i) {
      const Op& a = *original_ops[i];
      const Op& b = *loaded_ops[i];
      ASSERT_EQ(a.comm.has_value(), b.comm.has_value()) << "rank " << rank << " op " << i;
      ASSERT_EQ(a.inputs.size(), b.inputs.size()) << a.name;
      for (std::size_t t = 0; t < a.inputs.size(); ++t) {
        EXPECT_EQ(a.inputs[t].shape, b.inputs[t].shape) << a.name;
        EXPECT_EQ(a.inputs[t].dtype, b.inputs[t].dtype) << a.name;
        EXPECT_EQ(a.inputs[t].tensor_id, b.inputs[t].tensor_id) << a.name;
      }
      if (!a.comm) {
        EXPECT_EQ(a.name, b.name);
        continue;
      }
      ++collectives;
      EXPECT_EQ(a.comm->kind, b.comm->kind) << a.name;
      EXPECT_EQ(a.comm->process_group, b.comm->process_group) << a.name;
      EXPECT_EQ(a.comm->bytes_in, b.comm->bytes_in) << a.name;
      EXPECT_EQ(a.comm->bytes_out, b.comm->bytes_out) << a.name;
      EXPECT_EQ(a.comm->peer_rank, b.comm->peer_rank) << a.name;
      EXPECT_EQ(a.comm->group_size, b.comm->group_size) << a.name;
    }
    EXPECT_GT(collectives, 0);
    ASSERT_EQ(loaded.process_groups.size(), generated.process_groups.size());
    for (const ProcessGroup& group : generated.process_groups) {
      const auto found =
          std::find_if(loaded.process_groups.begin(), loaded.process_groups.end(),
                       [&](const ProcessGroup& candidate) { return candidate.name == group.name; });
      ASSERT_NE(found, loaded.process_groups.end()) << group.name;
      EXPECT_EQ(found->ranks, group.ranks) << group.name;
    }
  }
}

TEST(ExecutionTraceWriter, ReadBackTracesSimulateLikeTheGeneratedOnes) {
  const TransformerConfig model = test_support::tiny_llama();
  const ParallelConfig parallel = test_support::tiny_tp2_pp2_dp2();
  std::vector<Trace> generated;
  std::vector<Trace> loaded;
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    generated.push_back(generators::llm::generate_llm_rank(model, parallel, rank));
    loaded.push_back(round_trip(generated.back()));
  }
  const double generated_us = simulated_iteration_us(generated, false);
  const double loaded_us = simulated_iteration_us(loaded, true);
  std::cout << "tiny TP2 PP2 DP2: generated " << generated_us << " us, written and read back "
            << loaded_us << " us\n";
  EXPECT_GT(generated_us, 0);
  EXPECT_NEAR(loaded_us, generated_us, 1e-6 * generated_us);
}

// Two interleaved stages: gradients travel on the rank pair's second message stream
// (CommInfo::match_tag 1), which the written trace keeps ("p2p_match_tag"); read back, the
// transfers pair as generated and the iteration is the same.
TEST(ExecutionTraceWriter, TwoStageInterleavedMatchTagsSurviveTheRoundTrip) {
  const TransformerConfig model = test_support::tiny_llama();
  ParallelConfig parallel = test_support::tiny_tp2_pp2_dp2();
  parallel.virtual_stages = 2;
  std::vector<Trace> generated;
  std::vector<Trace> loaded;
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    generated.push_back(generators::llm::generate_llm_rank(model, parallel, rank));
    loaded.push_back(round_trip(generated.back()));
    int tagged = 0;
    const auto original_ops = working_ops(generated.back());
    const auto loaded_ops = working_ops(loaded.back());
    ASSERT_EQ(loaded_ops.size(), original_ops.size());
    for (std::size_t i = 0; i < original_ops.size(); ++i) {
      if (!original_ops[i]->comm)
        continue;
      EXPECT_EQ(loaded_ops[i]->comm->match_tag, original_ops[i]->comm->match_tag);
      tagged += original_ops[i]->comm->match_tag != 0;
    }
    EXPECT_GT(tagged, 0) << "rank " << rank;
  }
  const double generated_us = simulated_iteration_us(generated, false);
  EXPECT_GT(generated_us, 0);
  EXPECT_NEAR(simulated_iteration_us(loaded, true), generated_us, 1e-6 * generated_us);
}

TEST(ExecutionTraceWriter, DlrmAllToAllvSplitsSurviveTheRoundTrip) {
  namespace dlrm = generators::dlrm;
  const dlrm::DlrmConfig config = dlrm::load_dlrm_config(std::string(PERFSIM_SOURCE_DIR) +
                                                         "/configs/dlrm/dlrm-small-4gpu.json");
  const dlrm::ShardingPlan plan = dlrm::shard_tables(
      config.tables, dlrm::Sharder::kSizeLookupGreedy, {config.ranks, config.dtype, 0, 0});
  std::vector<Trace> generated;
  std::vector<Trace> loaded;
  for (int rank = 0; rank < config.ranks; ++rank) {
    generated.push_back(dlrm::generate_dlrm_rank(config, plan, rank));
    loaded.push_back(round_trip(generated.back()));
    int all_to_allv = 0;
    const auto a = working_ops(generated.back());
    const auto b = working_ops(loaded.back());
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!a[i]->comm || a[i]->comm->kind != CollectiveKind::kAllToAllv)
        continue;
      ++all_to_allv;
      ASSERT_TRUE(b[i]->comm.has_value());
      EXPECT_EQ(b[i]->comm->kind, CollectiveKind::kAllToAllv);
      EXPECT_EQ(b[i]->comm->in_split_elements, a[i]->comm->in_split_elements);
      EXPECT_EQ(b[i]->comm->out_split_elements, a[i]->comm->out_split_elements);
      EXPECT_EQ(b[i]->comm->bytes_in, a[i]->comm->bytes_in);
    }
    EXPECT_GT(all_to_allv, 0) << "rank " << rank;
  }
  const double generated_us = simulated_iteration_us(generated, false);
  const double loaded_us = simulated_iteration_us(loaded, true);
  std::cout << "dlrm-small-4gpu: generated " << generated_us << " us, written and read back "
            << loaded_us << " us\n";
  EXPECT_NEAR(loaded_us, generated_us, 1e-6 * generated_us);
}

}  // namespace
}  // namespace perfsim
