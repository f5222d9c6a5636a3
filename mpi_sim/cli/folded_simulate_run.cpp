#include "mpi_sim/cli/folded_simulate_run.hpp"

#include <cstdio>
#include <iostream>

#include "scenario/folded_simulation.hpp"

namespace perfsim::cli {
namespace {

// Why this run cannot fold at all, before anything is generated; "" when it may.
std::string not_foldable(const scenario::SimulateOptions& options) {
  if (!options.kineto_specs.empty() || !options.et_specs.empty())
    return "trace-driven run: each rank's program comes from its own trace";
  if (options.dlrm.requested())
    return "DLRM workload: only generated LLM workloads fold";
  if (!options.llm.requested())
    return "synthetic workload: only generated LLM workloads fold";
  return "";
}

}  // namespace

bool run_folded_simulation(const scenario::SimulateOptions& options, const CommandContext& context,
                           const FoldedReport& report,
                           const std::function<void(const RankResult&)>& timeline_sink) {
  if (options.fold == "none")
    return false;
  const bool root = context.processes.is_root();
  const bool status_lines = root && !options.quiet;
  if (const std::string reason = not_foldable(options); !reason.empty()) {
    if (status_lines && options.fold == "auto")
      std::cerr << "perfsim: fold: off (" << reason << ")\n";
    return false;
  }
  // Process 0 proves and simulates: the proof costs about one stage's generation per stage
  // (folded_simulation.hpp), so sharing it would only make every process hold the templates.
  std::string refusal;
  scenario::FoldedRun run;
  if (root) {
    const scenario::LlmScenario scenario = scenario::read_llm_scenario(options.llm);
    if (status_lines)
      std::cerr << "perfsim: fold: proving " << scenario.parallel.world_size() << " ranks against "
                << scenario.parallel.pp
                << " pipeline-stage representatives (each stage's template generated once, every "
                   "rank's collectives priced and compared; --fold none simulates every rank "
                   "instead)\n";
    run = scenario::fold_in_process(scenario, !options.timeline_path.empty(), timeline_sink);
    refusal = run.refusal.value_or("");
    if (refusal.empty()) {
      std::size_t held_ops = 0;
      for (const engine::RankProgram& program : run.inputs.programs)
        held_ops += program.ops.size();
      char line[240];
      std::snprintf(line, sizeof(line),
                    "perfsim: fold: %zu representatives for %d ranks (%zu ops held); proof %.3f s "
                    "on process 0 (stage templates %.3f s), simulation %.3f s\n",
                    run.representatives, scenario.parallel.world_size(), held_ops, run.proof_s,
                    run.generation_s, run.simulation_s);
      if (status_lines)
        std::cerr << line;
    }
  }
  // The others wait without spinning while process 0 proves.
  context.processes.quiet_barrier();
  refusal = context.processes.broadcast_text_from_root(refusal);
  if (!refusal.empty()) {
    if (status_lines)
      std::cerr << "perfsim: fold: off (" << refusal << "); simulating every rank\n";
    return false;
  }
  if (root)
    report(run.inputs, run.results);
  // The others wait without spinning while process 0 simulates and reports.
  context.processes.quiet_barrier();
  return true;
}

}  // namespace perfsim::cli
