#include "scenario/folded_simulation.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "mpi_sim/engine/folded_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "scenario/llm_stage_compiler.hpp"
#include "scenario/plan_simulation.hpp"

namespace perfsim::scenario {

namespace llm = generators::llm;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

WitnessCollector::Key witness_key(const CommInfo& comm) {
  return {comm.process_group,
          comm.peer_rank,
          comm.kind,
          comm.group_size,
          comm.dtype,
          comm.bytes_in,
          comm.bytes_out,
          comm.in_split_elements,
          comm.out_split_elements,
          comm.root_rank,
          comm.tag,
          comm.match_tag};
}

}  // namespace

std::vector<int> stage_representative_of(const llm::ParallelConfig& parallel) {
  std::vector<int> representative_of(static_cast<std::size_t>(parallel.world_size()));
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    const int stage = llm::coordinates_of(parallel, rank).pp;
    representative_of[static_cast<std::size_t>(rank)] = llm::rank_of(parallel, {0, 0, stage, 0});
  }
  return representative_of;
}

WitnessCollector::WitnessCollector(const Trace& template_header, int stage)
    : witnesses_{stage, {}} {
  Trace& trace = witnesses_.trace;
  trace.source = template_header.source;
  trace.format = template_header.format;
  trace.world_size = template_header.world_size;
}

int WitnessCollector::observe(const Op& op) {
  if (!op.comm)
    return -1;
  ++collectives_;
  const int next = static_cast<int>(index_of_key_.size());
  const auto [found, added] = index_of_key_.try_emplace(witness_key(*op.comm), next);
  if (added)
    witnesses_.trace.ops.push_back(op);
  return found->second;
}

llm::StageTemplate WitnessCollector::take() {
  witnesses_.trace.reindex();
  return std::move(witnesses_);
}

FoldInputs load_fold_inputs(const LlmScenario& scenario) {
  FoldInputs fold;
  fold.inputs = load_llm_inputs(scenario, {});
  const engine::ProgramSources sources{
      fold.inputs.kernel_source.get(), fold.inputs.comm_source.get(), {}};
  const int world_size = scenario.parallel.world_size();
  for (int representative : pipeline_representatives(scenario.parallel)) {
    // Compiled as the template is generated: one pipeline step's ops are held at a time.
    CompiledStageTemplate compiled =
        compile_stage_template(scenario.model, scenario.parallel, representative, sources);
    fold.witnesses.push_back(std::move(compiled.witnesses));
    fold.inputs.programs.push_back(std::move(compiled.program));
    fold.representative_witnesses.push_back(engine::build_rank_program(
        llm::instantiate_llm_rank(fold.witnesses.back(), scenario.parallel, representative),
        representative, world_size, sources));
  }
  share_links_if_asked(scenario, fold.inputs, fold.inputs.programs);
  return fold;
}

FoldProof prove_ranks(const LlmScenario& scenario, const FoldInputs& fold,
                      std::span<const int> representative_of, std::span<const int> ranks) {
  FoldProof proof;
  const engine::ProgramSources sources{
      fold.inputs.kernel_source.get(), fold.inputs.comm_source.get(), {}};
  const int world_size = scenario.parallel.world_size();
  for (int rank : ranks) {
    const int stage = llm::coordinates_of(scenario.parallel, rank).pp;
    const engine::RankProgram& representative =
        fold.representative_witnesses.at(static_cast<std::size_t>(stage));
    if (representative_of[static_cast<std::size_t>(rank)] == rank) {
      proof.renamings.push_back(engine::identity_renaming(representative));
      continue;
    }
    const engine::RankProgram program = engine::build_rank_program(
        llm::instantiate_llm_rank(fold.witnesses.at(static_cast<std::size_t>(stage)),
                                  scenario.parallel, rank),
        rank, world_size, sources);
    engine::ProgramComparison comparison =
        engine::compare_with_representative(representative, program, representative_of);
    if (!comparison.renaming) {
      proof.differences.emplace_back(rank, std::move(comparison.difference));
      return proof;  // one difference is enough to refuse
    }
    proof.renamings.push_back(std::move(*comparison.renaming));
  }
  return proof;
}

std::optional<std::string> fold_refusal(const FoldProof& proof,
                                        std::span<const int> representative_of) {
  if (!proof.differences.empty())
    return proof.differences.front().second;
  if (proof.renamings.size() != representative_of.size())
    return "only " + std::to_string(proof.renamings.size()) + " of " +
           std::to_string(representative_of.size()) + " ranks proven";
  return engine::fold_consistency(proof.renamings, representative_of);
}

std::vector<RankResult> simulate_folded(
    const SimulationInputs& representatives, std::span<const int> representative_of,
    std::span<const engine::GroupRenaming> renamings, bool record_timeline,
    const std::function<void(const RankResult&)>& timeline_sink) {
  engine::FoldedClockSync sync(std::vector<int>(representative_of.begin(), representative_of.end()),
                               renamings);
  const std::vector<RankResult> simulated = engine::simulate_programs(
      representatives.programs, representatives.overheads, sync, record_timeline);
  std::vector<RankResult> results;
  results.reserve(renamings.size());
  for (const engine::GroupRenaming& renaming : renamings) {
    const int representative = representative_of[static_cast<std::size_t>(renaming.rank)];
    const auto found =
        std::find_if(simulated.begin(), simulated.end(),
                     [&](const RankResult& result) { return result.sim_rank == representative; });
    results.push_back(engine::clone_result(*found, renaming));
    if (timeline_sink) {
      timeline_sink(results.back());
      std::vector<TimelineSlice>().swap(results.back().timeline);
    }
  }
  std::sort(results.begin(), results.end(),
            [](const RankResult& a, const RankResult& b) { return a.sim_rank < b.sim_rank; });
  return results;
}

FoldedRun fold_in_process(const LlmScenario& scenario, bool record_timeline,
                          const std::function<void(const RankResult&)>& timeline_sink) {
  const auto start = Clock::now();
  FoldedRun run;
  const std::vector<int> representative_of = stage_representative_of(scenario.parallel);
  FoldInputs fold = load_fold_inputs(scenario);
  run.representatives = fold.inputs.programs.size();
  run.generation_s = seconds_since(start);
  std::vector<int> all(representative_of.size());
  for (std::size_t rank = 0; rank < all.size(); ++rank)
    all[rank] = static_cast<int>(rank);
  const FoldProof proof = prove_ranks(scenario, fold, representative_of, all);
  run.refusal = fold_refusal(proof, representative_of);
  run.inputs = std::move(fold.inputs);
  run.proof_s = seconds_since(start);
  if (run.refusal)
    return run;
  const auto simulation_start = Clock::now();
  run.results = simulate_folded(run.inputs, representative_of, proof.renamings, record_timeline,
                                timeline_sink);
  run.simulation_s = seconds_since(simulation_start);
  run.inputs.notes.push_back(fold_note(run.representatives, scenario.parallel.world_size()));
  return run;
}

std::string fold_note(std::size_t representatives, int world_size) {
  return "fold: " + std::to_string(representatives) + " representative ranks simulated for " +
         std::to_string(world_size) +
         " (every other rank proven to run its stage representative's program; --fold none "
         "simulates each)";
}

}  // namespace perfsim::scenario
