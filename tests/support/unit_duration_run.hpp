#pragma once
// Generated ranks run through the engine with every kernel and collective taking 1 us: for
// tests where only the matching of collectives and the ordering of ops matter.
#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/collective_matching.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::test_support {

class UnitKernels final : public KernelDurationSource {
 public:
  DurationUs kernel_duration_us(const Op&, const Kernel&) const override { return 1; }
  std::string_view name() const override { return "unit"; }
};

class UnitCollectives final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall&) const override { return 1; }
  std::string_view name() const override { return "unit"; }
};

inline std::vector<Trace> generate_every_rank(const generators::llm::TransformerConfig& model,
                                              const generators::llm::ParallelConfig& parallel) {
  std::vector<Trace> traces;
  for (int rank = 0; rank < parallel.world_size(); ++rank)
    traces.push_back(generators::llm::generate_llm_rank(model, parallel, rank));
  return traces;
}

// The traces' collectives match over every group and the engine runs every rank to its end.
inline void expect_runs_to_completion(const std::vector<Trace>& traces) {
  UnitKernels kernels;
  UnitCollectives collectives;
  const int world_size = static_cast<int>(traces.size());
  std::vector<engine::RankProgram> programs;
  std::vector<engine::RankSignatures> signatures;
  for (const Trace& trace : traces) {
    programs.push_back(
        engine::build_rank_program(trace, trace.rank, world_size, {&kernels, &collectives, {}}));
    signatures.push_back(engine::rank_signatures(programs.back()));
  }
  const auto mismatch = engine::find_collective_mismatch(signatures, world_size);
  ASSERT_FALSE(mismatch.has_value()) << *mismatch;
  engine::InProcessClockSync sync;
  const std::vector<RankResult> results =
      engine::simulate_programs(programs, HostOverheads{}, sync);
  ASSERT_EQ(results.size(), traces.size());
  for (const RankResult& result : results)
    EXPECT_GT(result.iteration_us, 0) << "rank " << result.sim_rank;
}

}  // namespace perfsim::test_support
