// perfsim simulate: load or generate one trace per simulated rank, check collectives across
// ranks, traverse every rank with MPI clock synchronization, report on process 0.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>

#include "generators/synthetic_workload.hpp"
#include "hdf5/column_table.hpp"
#include "io/atomic_file.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "mpi_sim/cli/folded_simulate_run.hpp"
#include "mpi_sim/cli/simulate_report.hpp"
#include "mpi_sim/cli/terminal.hpp"
#include "mpi_sim/cli/workload_options.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "mpi_sim/mpi/distributed_run.hpp"
#include "mpi_sim/mpi/process_packing.hpp"
#include "perfsim/error.hpp"
#include "results/rank_list.hpp"
#include "results/results_file.hpp"
#include "results/timeline_writer.hpp"
#include "scenario/dlrm_simulation.hpp"
#include "scenario/llm_simulation.hpp"
#include "scenario/simulation_inputs.hpp"

namespace perfsim::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU time (user + system, every thread) this process has used so far.
double process_cpu_s() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// The simulation phase's CPU time summed over the MPI processes, and simulated ops per CPU
// second (bench/scale.sh's ops/s/core): on a loaded machine the wall time counts waiting, and
// ops over the wall time of several processes counts each core once for all of them.
void print_simulation_cpu(const CommandContext& context, double phase_cpu_s,
                          std::size_t simulated_ops) {
  const long long sum_us = context.processes.sum_on_root(std::llround(phase_cpu_s * 1e6));
  if (!context.processes.is_root())
    return;
  const double sum_s = static_cast<double>(sum_us) * 1e-6;
  std::fprintf(
      stderr,
      "perfsim: simulation CPU %.3f s summed over %d MPI process(es): %.0f simulated ops per "
      "CPU second\n",
      sum_s, context.processes.size(),
      sum_s > 0 ? static_cast<double>(simulated_ops) / sum_s : 0.0);
}

void report_results(const scenario::SimulateOptions& options,
                    const scenario::SimulationInputs& inputs, std::span<const RankResult> results,
                    double wall_s) {
  print_simulate_report(options, inputs, results, wall_s, std::cout);
  if (!options.results_path.empty()) {
    std::map<std::string, std::string> attributes = inputs.attributes;
    attributes["perfsim_version"] = PERFSIM_VERSION_STRING;
    results::write_run_results(options.results_path, options.run_name, results, attributes);
  }
  if (!options.report_path.empty())
    write_simulate_html(options, inputs, results, wall_s);
}

// Every rank by default; a single-rank run has only its own.
results::TimelineRequest timeline_request(const scenario::SimulateOptions& options,
                                          int world_size) {
  if (options.single_rank >= 0 && options.timeline_ranks == "all")
    return {options.timeline_path, options.timeline_format, {options.single_rank}};
  return {options.timeline_path, options.timeline_format,
          results::parse_rank_list(options.timeline_ranks, world_size, "--timeline-ranks")};
}

// Runs `simulate` with a sink that writes the requested timeline rank by rank on process 0;
// without a timeline, or on the other processes, the sink is empty.
void with_timeline(const scenario::SimulateOptions& options, int world_size, bool root,
                   const std::function<void(const results::RankSink&)>& simulate) {
  if (options.timeline_path.empty() || !root) {
    simulate({});
    return;
  }
  results::write_timeline(timeline_request(options, world_size), world_size, simulate);
}

// An output that cannot be written fails the run before it simulates, not after (exit 3).
void check_outputs_writable(const scenario::SimulateOptions& options) {
  if (!options.results_path.empty()) {
    io::check_writable(options.results_path);
    h5::check_appendable(options.results_path);
  }
  if (!options.timeline_path.empty())
    results::check_timeline_writable({options.timeline_path, options.timeline_format, {}});
  if (!options.report_path.empty())
    io::check_writable(options.report_path);
}

int run_single_rank(const scenario::SimulateOptions& options, const CommandContext& context) {
  if (!context.processes.is_root())
    return 0;
  check_outputs_writable(options);
  const auto start = Clock::now();
  const int world_size = scenario::simulated_world_size(options, context.processes.size());
  scenario::SimulationInputs inputs =
      scenario::load_simulation_inputs(options, world_size, {options.single_rank});
  inputs.warnings.push_back(
      "note: single-rank run: communication is NOT synchronized across ranks; each collective "
      "starts when this rank is ready and lasts its own measured/modelled time");
  engine::UnsynchronizedClockSync sync;
  std::vector<engine::RankSimulator> simulators;
  simulators.emplace_back(inputs.programs.front(), inputs.overheads, sync,
                          !options.timeline_path.empty());
  engine::run_to_completion(simulators, sync);
  std::vector<RankResult> results{simulators.front().result()};
  with_timeline(options, world_size, true, [&](const results::RankSink& sink) {
    if (sink)  // empty without --timeline
      sink(results.front());
  });
  report_results(options, inputs, results, seconds_since(start));
  return 0;
}

// Every rank simulated across the MPI processes; process 0 gets every result (the wanted ranks'
// timelines went to `sink` on the way) and the inputs for the report.
std::vector<RankResult> simulate_every_rank(const scenario::SimulateOptions& options,
                                            const CommandContext& context, int world_size,
                                            const std::vector<int>& timeline_ranks,
                                            const results::RankSink& sink,
                                            scenario::SimulationInputs& inputs) {
  const auto start = Clock::now();
  int ranks_per_process = options.ranks_per_process;
  if (ranks_per_process <= 0) {
    const mpi::ProcessPacking packing =
        mpi::choose_packing(context.processes.communicator(), world_size);
    ranks_per_process = packing.ranks_per_process;
    if (packing.packed && context.processes.is_root() && !options.quiet) {
      std::cerr << "perfsim: " << packing.processes_per_node << " MPI processes share "
                << packing.cores_per_node << " cores: packing " << ranks_per_process
                << " simulated ranks per process onto " << packing.active_processes
                << " processes, the others wait (`perfsim simulate ... --ranks-per-process 1` "
                   "forces one rank each)\n";
    }
  }
  if (static_cast<long>(ranks_per_process) * context.processes.size() < world_size) {
    throw mpi::AllRanksError("", "--ranks-per-process",
                             std::to_string(context.processes.size()) + " processes x " +
                                 std::to_string(ranks_per_process) +
                                 " ranks per process cannot "
                                 "hold " +
                                 std::to_string(world_size) + " simulated ranks");
  }
  const std::vector<int> placement = mpi::block_placement(world_size, ranks_per_process);
  const std::vector<int> local_ranks = mpi::ranks_placed_on(placement, context.processes.rank());
  if (context.processes.is_root() && !options.quiet) {
    std::cerr << "perfsim: simulating " << world_size << " ranks on " << context.processes.size()
              << " MPI processes (" << ranks_per_process << " per process)\n";
  }
  inputs = scenario::load_simulation_inputs(options, world_size, local_ranks);
  mpi::check_collectives(context.processes.communicator(), inputs.programs, world_size);
  if (context.processes.is_root() && !options.quiet)
    std::cerr << "perfsim: collectives match across ranks\n";
  mpi::DistributedOptions distributed;
  distributed.record_timeline = !options.timeline_path.empty();
  distributed.timeline_wanted = [&timeline_ranks](int rank) {
    return std::binary_search(timeline_ranks.begin(), timeline_ranks.end(), rank);
  };
  distributed.timeline_sink = sink;
  distributed.stall_timeout = std::chrono::seconds(options.stall_timeout_s);
  distributed.progress_interval = std::chrono::milliseconds(options.progress_interval_ms);
  // Progress where someone watches: process 0's ranks, one line rewritten on a terminal.
  const bool show_progress =
      context.processes.is_root() && !options.quiet && stderr_reaches_terminal();
  if (show_progress) {
    distributed.progress = [start](const engine::RunProgress& progress) {
      std::fprintf(stderr, "\r  process 0: %zu/%zu ranks done, %.2f/%.2f M ops (%.0f s)\033[K",
                   progress.ranks_finished, progress.ranks, progress.ops_run / 1e6,
                   progress.ops_total / 1e6, seconds_since(start));
    };
  }
  std::vector<RankResult> results = mpi::run_distributed(
      context.processes.communicator(), inputs.programs, placement, inputs.overheads, distributed);
  if (show_progress)
    std::fprintf(stderr, "\r\033[K");
  return results;
}

int run_all_ranks(const scenario::SimulateOptions& options, const CommandContext& context) {
  const auto start = Clock::now();
  const double cpu_start_s = process_cpu_s();
  // This process's CPU time up to the report, which the wall time the report prints also
  // stops at; a process that only waited for process 0 counts until it is released.
  double phase_cpu_s = -1;
  std::size_t simulated_ops = 0;
  auto count_ops = [&simulated_ops](std::span<const RankResult> ranks) {
    for (const RankResult& rank : ranks)
      simulated_ops += static_cast<std::size_t>(rank.ops);
  };
  const bool root = context.processes.is_root();
  if (root)
    check_outputs_writable(options);
  const int world_size = scenario::simulated_world_size(options, context.processes.size());
  std::vector<int> timeline_ranks;
  if (!options.timeline_path.empty()) {
    try {
      timeline_ranks = timeline_request(options, world_size).ranks;
    } catch (const InputError& error) {  // every process parsed the same list
      throw mpi::AllRanksError(error.file(), error.location(), error.problem());
    }
  }
  std::vector<RankResult> results;
  scenario::SimulationInputs inputs;
  bool folded = false;
  with_timeline(options, world_size, root, [&](const results::RankSink& sink) {
    folded = run_folded_simulation(
        options, context,
        [&](const scenario::SimulationInputs& folded_inputs,
            std::span<const RankResult> folded_results) {
          phase_cpu_s = process_cpu_s() - cpu_start_s;
          count_ops(folded_results);
          report_results(options, folded_inputs, folded_results, seconds_since(start));
        },
        sink);
    if (!folded) {
      results = simulate_every_rank(options, context, world_size, timeline_ranks, sink, inputs);
      phase_cpu_s = process_cpu_s() - cpu_start_s;
      count_ops(results);
    }
  });
  if (!folded && root)
    report_results(options, inputs, results, seconds_since(start));
  if (phase_cpu_s < 0)
    phase_cpu_s = process_cpu_s() - cpu_start_s;
  if (!options.quiet)
    print_simulation_cpu(context, phase_cpu_s, simulated_ops);
  return 0;
}

// The embedded default scenario (generators/llm/llm_default_scenario.hpp): one iteration of
// Llama 3 70B on 8 nodes x 8 H100 (400G InfiniBand), TP 8 within a node, PP 4, DP 2, with
// sequence parallelism and ZeRO-1; model, topology and device are compiled into the binary.
scenario::SimulateOptions default_scenario_options() {
  scenario::SimulateOptions options;
  options.llm = scenario::embedded_default_llm_options();
  options.run_name = "default";
  return options;
}

}  // namespace

void add_simulate_options(CLI::App& sub, scenario::SimulateOptions& options) {
  sub.add_option("--kineto", options.kineto_specs,
                 "Kineto traces, one per rank: files, archive members (a.tar.gz:member), or a "
                 "whole .tar.gz holding one trace per rank");
  sub.add_option("--et", options.et_specs,
                 "PyTorch execution traces (JSON) or Chakra protobuf traces (.et), one per rank "
                 "(files, archive members, or a whole .tar.gz); durations come from the models");
  sub.add_option("--durations", options.kernel_durations,
                 "kernel durations: measured (Kineto, Chakra .et duration_micros) or model "
                 "(default: measured for Kineto, model for execution traces)")
      ->check(CLI::IsMember({"measured", "model"}));
  sub.add_option(
         "--comm", options.comm_durations,
         "collective durations: measured (Kineto) or model (needs --topology); default: measured "
         "for Kineto traces, model otherwise")
      ->check(CLI::IsMember({"measured", "model"}));
  sub.add_option("--kernel-assets", options.kernel_assets,
                 "trained MLP kernel models (HDF5 from `perfsim train`); default: none (analytical "
                 "models)");
  sub.add_option("--overheads", options.overheads_path,
                 "host-overhead asset (JSON from `perfsim overheads extract`); default: "
                 "extracted from the given Kineto traces");
  sub.add_option("--single-rank", options.single_rank,
                 "simulate only this rank, without cross-rank synchronization")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--ranks", options.synthetic.ranks,
                 "synthetic workload: simulated ranks (default: one per MPI process)");
  sub.add_option("--repetitions", options.synthetic.repetitions,
                 "synthetic workload: (compute, collective) repetitions per rank")
      ->check(CLI::PositiveNumber);
  sub.add_option("--compute-us", options.synthetic.compute_us,
                 "synthetic workload: compute kernel duration, us")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--bytes", options.synthetic.collective_bytes,
                 "synthetic workload: bytes per collective")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--group-size", options.synthetic.group_size,
                 "synthetic workload: collective group size (0 = whole world)");
  sub.add_option("--group-layout", options.group_layout,
                 "synthetic workload: consecutive (TP-like) or strided (DP-like) groups")
      ->check(CLI::IsMember({"consecutive", "strided"}));
  sub.add_option("--ranks-per-process", options.ranks_per_process,
                 "simulated ranks per MPI process (default: ranks / processes, rounded up)");
  sub.add_option("--results", options.results_path, "results HDF5 file (\"\" to skip)");
  sub.add_option("--run-name", options.run_name, "group name of this run in the results file");
  sub.add_option("--timeline", options.timeline_path,
                 "write a timeline of the iteration: a Chrome/Perfetto JSON file, or with "
                 "--timeline-format kineto a directory of PyTorch-profiler traces (default: none)");
  sub.add_option("--timeline-format", options.timeline_format,
                 "chrome (one Trace Event Format file, every rank a process: ui.perfetto.dev) or "
                 "kineto (DIR/rank-N.json per rank, as PyTorch's profiler writes: Holistic Trace "
                 "Analysis)")
      ->check(CLI::IsMember({"chrome", "kineto"}))
      ->capture_default_str();
  sub.add_option("--timeline-ranks", options.timeline_ranks,
                 "ranks whose timelines to write: all, or ranks and ranges like 0,8-15")
      ->capture_default_str();
  sub.add_option("--report", options.report_path,
                 "also write a self-contained HTML report to this file: pipeline schedule, "
                 "time breakdown, memory and communication charts (inline SVG, no network; "
                 "default: none)");
  sub.add_option("--start-skew", options.start_skew,
                 "Kineto input: start each rank at its measured step start (measured) or at 0")
      ->check(CLI::IsMember({"measured", "zero"}));
  sub.add_option("--overhead-extraction", options.overhead_extraction,
                 "without --overheads: replay (every sample, profiler cost kept: predicts the "
                 "profiled run) or paper (1.5 IQR outliers and 2 us/event profiler cost removed, "
                 "seed 000 Sec. 4.3.3)")
      ->check(CLI::IsMember({"replay", "paper"}));
  sub.add_option("--host-timing", options.host_timing,
                 "Kineto input: replay each op's recorded host time (recorded) or use the "
                 "T1..T5 means per op name (overheads); default: recorded")
      ->check(CLI::IsMember({"recorded", "overheads"}));
  sub.add_option("--fold", options.fold,
                 "generated LLM workloads: simulate one representative per pipeline stage and "
                 "give every rank proven to run the same program its result (auto, the "
                 "default), or simulate every rank (none)")
      ->check(CLI::IsMember({"auto", "none"}));
  sub.add_option("--stall-timeout-s", options.stall_timeout_s,
                 "fail when no cross-process collective completes for this long")
      ->check(CLI::PositiveNumber);
  sub.add_option("--format", options.format,
                 "standard output: text (a summary of at most 25 lines first), json (schema "
                 "perfsim-simulate/1, docs/output-formats.md) or csv (figure,value,unit)")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  sub.add_option("--detail", options.details,
                 "text format: tables after the summary: ranks (classes of identical ranks), "
                 "groups (communication per group kind), streams, memory (every pipeline "
                 "stage), workload, or all; repeat or comma-separate")
      ->delimiter(',')
      ->check(CLI::IsMember({"ranks", "groups", "streams", "memory", "workload", "all"}));
  sub.add_flag("--quiet", options.quiet,
               "no status or progress lines on standard error (progress shows only on a "
               "terminal anyway)");
  sub.add_option("--progress-interval-ms", options.progress_interval_ms,
                 "for tests: milliseconds between progress lines on a terminal (0: every few "
                 "rank steps, so a test sees one however fast the machine simulates)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_llm_simulate_options(sub, options.llm);
  add_dlrm_simulate_options(sub, options.dlrm);
}

int run_simulate(const scenario::SimulateOptions& options, const CommandContext& context) {
  if (!options.llm.framework.empty() && context.processes.is_root() && !options.quiet) {
    std::string switches;
    for (const std::string& flag : options.llm.framework_switches)
      switches += (switches.empty() ? "" : " ") + flag;
    std::cerr << "perfsim: framework " << options.llm.framework << ": "
              << (switches.empty() ? "sets none of the switches the command line left out"
                                   : "sets " + switches + " (switches the command line left out)")
              << "\n";
  }
  if (options.single_rank >= 0)
    return run_single_rank(options, context);
  return run_all_ranks(options, context);
}

void add_simulate_command(CLI::App& app, CommandRegistry& registry) {
  auto options = std::make_shared<scenario::SimulateOptions>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Simulate one training iteration: one trace per simulated rank (Kineto traces of a real "
      "run, or the synthetic workload when no trace is given).");
  add_simulate_options(*sub, *options);
  registry.add(sub, RankScope::kAllRanks, [options](const CommandContext& context) {
    return run_simulate(*options, context);
  });
  registry.set_default([](const CommandContext& context) {
    if (context.processes.is_root()) {
      std::cout << "perfsim: no subcommand given; running the embedded default scenario "
                   "(`perfsim --help` lists the commands)\n";
    }
    return run_simulate(default_scenario_options(), context);
  });
}

}  // namespace perfsim::cli
