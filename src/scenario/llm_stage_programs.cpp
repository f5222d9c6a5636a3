#include "scenario/llm_stage_programs.hpp"

#include <map>
#include <memory>
#include <optional>

#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/bound_program.hpp"
#include "scenario/llm_stage_compiler.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

// One stage's compiled ops and what binding them to another rank of the stage needs.
struct CompiledStage {
  CompiledStageTemplate compiled;  // its first local rank's program, unbound
  std::shared_ptr<const std::vector<std::uint32_t>> last_indices;  // shared while ranks agree
};

}  // namespace

std::vector<engine::RankProgram> llm_rank_programs(const llm::TransformerConfig& model,
                                                   const llm::ParallelConfig& parallel,
                                                   const std::vector<int>& local_ranks,
                                                   const engine::ProgramSources& sources) {
  std::vector<engine::RankProgram> programs;
  programs.reserve(local_ranks.size());
  std::map<int, CompiledStage> stages;
  for (const int rank : local_ranks) {
    const int stage = llm::coordinates_of(parallel, rank).pp;
    auto found = stages.find(stage);
    if (found == stages.end()) {
      CompiledStage compiled{compile_stage_template(model, parallel, rank, sources), nullptr};
      programs.push_back(compiled.compiled.program);
      stages.emplace(stage, std::move(compiled));
      continue;
    }
    CompiledStage& compiled = found->second;
    if (compiled.compiled.role_of == nullptr) {
      programs.push_back(compile_stage_template(model, parallel, rank, sources).program);
      continue;
    }
    const Trace witness_trace =
        llm::instantiate_llm_rank(compiled.compiled.witnesses, parallel, rank);
    const engine::RankProgram witness_program =
        engine::build_rank_program(witness_trace, rank, parallel.world_size(), sources);
    std::vector<engine::BoundGroup> roles;
    roles.reserve(witness_program.coverage.collectives);
    for (const engine::SimOp& op : witness_program.ops) {
      if (op.collective)
        roles.push_back({op.collective->group, op.collective->members, op.collective->duration_us});
    }
    engine::RankProgram program = engine::bind_collectives(
        compiled.compiled.program, rank, witness_trace.source, std::move(roles),
        compiled.compiled.role_of, compiled.last_indices);
    compiled.last_indices = program.binding->index_in_group;
    programs.push_back(std::move(program));
  }
  return programs;
}

}  // namespace perfsim::scenario
