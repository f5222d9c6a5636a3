#include "scenario/llm_stage_programs.hpp"

#include <map>
#include <memory>
#include <optional>

#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/bound_program.hpp"
#include "scenario/folded_simulation.hpp"
#include "scenario/llm_pipeline_steps.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

// One stage's compiled ops and what binding them to another rank of the stage needs.
struct CompiledStage {
  engine::RankProgram compiled;  // its first local rank's, unbound
  llm::StageTemplate witnesses;
  // Per collective of `compiled`, its witness; null when the collectives do not map one to
  // one onto template ops (then every rank is compiled in full).
  std::shared_ptr<const std::vector<std::uint32_t>> role_of;
  std::shared_ptr<const std::vector<std::uint32_t>> last_indices;  // shared while ranks agree
};

// The witness of each collective of `program` (compiled from `stage_template`), when each
// collective is the one collective of its own template op, in template order.
std::shared_ptr<const std::vector<std::uint32_t>> roles_of_collectives(
    const engine::RankProgram& program, const std::vector<int>& witness_of) {
  std::size_t template_collectives = 0;
  for (const int witness : witness_of)
    template_collectives += witness >= 0 ? 1 : 0;
  if (template_collectives != program.coverage.collectives)
    return nullptr;
  auto role_of = std::make_shared<std::vector<std::uint32_t>>();
  role_of->reserve(template_collectives);
  std::optional<std::size_t> previous_position;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const engine::SimOp& op = program.ops[i];
    if (!op.collective)
      continue;
    const std::size_t position = program.ops.trace_position(i);
    if (position >= witness_of.size() || witness_of[position] < 0 ||
        (previous_position && *previous_position >= position) ||
        op.collective_index != role_of->size())
      return nullptr;
    previous_position = position;
    role_of->push_back(static_cast<std::uint32_t>(witness_of[position]));
  }
  return role_of;
}

engine::RankProgram compile_rank(const llm::TransformerConfig& model,
                                 const llm::ParallelConfig& parallel,
                                 llm::StageTemplate stage_template, int rank,
                                 const engine::ProgramSources& sources) {
  const int stage = stage_template.stage;
  const Trace trace = llm::instantiate_llm_rank(std::move(stage_template), parallel, rank);
  engine::RankProgram program =
      engine::build_rank_program(trace, rank, parallel.world_size(), sources);
  mark_pipeline_steps(trace, model, parallel, stage, program);
  return program;
}

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
      llm::StageTemplate stage_template = llm::generate_llm_stage_template(model, parallel, stage);
      CompiledStage compiled;
      compiled.witnesses = witness_collectives(stage_template);
      const std::vector<int> witness_of = witness_index_of_ops(stage_template);
      compiled.compiled = compile_rank(model, parallel, std::move(stage_template), rank, sources);
      compiled.role_of = roles_of_collectives(compiled.compiled, witness_of);
      programs.push_back(compiled.compiled);
      stages.emplace(stage, std::move(compiled));
      continue;
    }
    CompiledStage& compiled = found->second;
    if (compiled.role_of == nullptr) {
      programs.push_back(compile_rank(model, parallel,
                                      llm::generate_llm_stage_template(model, parallel, stage),
                                      rank, sources));
      continue;
    }
    const Trace witness_trace = llm::instantiate_llm_rank(compiled.witnesses, parallel, rank);
    const engine::RankProgram witness_program =
        engine::build_rank_program(witness_trace, rank, parallel.world_size(), sources);
    std::vector<engine::BoundGroup> roles;
    roles.reserve(witness_program.coverage.collectives);
    for (const engine::SimOp& op : witness_program.ops) {
      if (op.collective)
        roles.push_back({op.collective->group, op.collective->members, op.collective->duration_us});
    }
    engine::RankProgram program =
        engine::bind_collectives(compiled.compiled, rank, witness_trace.source, std::move(roles),
                                 compiled.role_of, compiled.last_indices);
    compiled.last_indices = program.binding->index_in_group;
    programs.push_back(std::move(program));
  }
  return programs;
}

}  // namespace perfsim::scenario
