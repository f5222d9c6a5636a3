#pragma once
// What `perfsim simulate` reads or generates before traversal: the options, and for the ranks
// this process simulates, their programs (traces with durations chosen) and the overheads.
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "generators/synthetic_workload.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "perfsim/duration_source.hpp"
#include "perfsim/host_overheads.hpp"
#include "perfsim/rank_result.hpp"
#include "report/detail_tables.hpp"
#include "report/group_kinds.hpp"
#include "report/run_report.hpp"
#include "scenario/dlrm_simulate_options.hpp"
#include "scenario/llm_simulate_options.hpp"

namespace perfsim::scenario {

struct SimulateOptions {
  std::vector<std::string> kineto_specs;
  std::vector<std::string> et_specs;  // PyTorch execution traces, one per rank
  // Duration sources: "measured" (from Kineto) or "model" (kernel models / collective model);
  // "" picks measured for Kineto input and model for execution traces.
  std::string kernel_durations;
  std::string comm_durations;
  // --device, --topology and --assets live in `llm` (shared with trace inputs): the device is
  // a name or file (default: the Kineto trace's GPU), the topology is needed by the collective
  // model, the assets default to configs/assets/collective_curves.h5 for trace inputs.
  std::string kernel_assets;  // optional MLP kernel-model assets (HDF5)
  std::string overheads_path;
  int single_rank = -1;
  generators::SyntheticWorkload synthetic{.ranks = 0};  // 0 ranks: one per MPI process
  std::string group_layout = "consecutive";
  int ranks_per_process = 0;
  std::string results_path = "perfsim-results.h5";
  std::string run_name = "simulate";
  std::string timeline_path;
  std::string timeline_format = "chrome";  // chrome (one file) or kineto (a directory, per rank)
  std::string timeline_ranks = "all";      // --timeline-ranks: "0,8-15" (results/rank_list.hpp)
  std::string report_path;  // --report: self-contained HTML (report/html_report.hpp), "" = none
  // Where each rank's clocks start: "measured" (its ProfilerStep start relative to the
  // earliest rank, so predicted step ends compare with measured ones) or "zero".
  std::string start_skew = "measured";
  // How overheads are extracted from the input traces when no asset is given: "replay" keeps
  // every sample and the profiler's own cost (the prediction is of the profiled run, e.g. to
  // validate against its step times); "paper" removes 1.5 IQR outliers and 2 us of profiler
  // cost per event (seed 000 Sec. 4.3.3/4.4.2: predicts the run without the profiler).
  std::string overhead_extraction = "replay";
  // Host time of each op in a Kineto trace: "recorded" replays every op's own recorded CPU
  // time (gaps, launch offsets and durations; blocking calls simulated), "overheads" uses the
  // T1..T5 means per op name (seed 000). "" picks recorded for Kineto input (the host time is
  // a measurement of the same run, whatever times the GPU), overheads for execution traces.
  std::string host_timing;
  int stall_timeout_s = 120;
  std::string format = "text";       // text, json or csv (process 0's standard output)
  std::vector<std::string> details;  // --detail: ranks, groups, streams, memory, workload, all
  bool quiet = false;                // no progress or status lines on standard error
  // Between progress lines (engine/local_scheduler.hpp); tests set 0 so that a line is due at
  // once and their checks do not depend on how fast the machine simulates.
  int progress_interval_ms = static_cast<int>(engine::kDefaultProgressInterval.count());
  // Folding (folded_simulation.hpp): "" folds generated LLM workloads where proven exact,
  // "auto" the same and also says why other workloads do not fold, "none" never folds.
  std::string fold;
  LlmSimulateOptions llm;    // --model ...: a generated LLM iteration
  DlrmSimulateOptions dlrm;  // --dlrm ...: a generated DLRM iteration
};

struct SimulationInputs {
  std::vector<engine::RankProgram> programs;  // this process's ranks, ascending
  HostOverheads overheads;
  std::vector<std::string> notes;     // inputs and models behind the figures, after the summary
  std::vector<std::string> warnings;  // caveats printed first, above the answer
  std::map<std::string, std::string> attributes;  // stored with the results
  // Measured steps (ProfilerStep windows) relative to the earliest rank's step start, for the
  // validation table; empty when the traces recorded none.
  struct MeasuredRankStep {
    int rank = 0;
    TimestampUs start_us = 0;
    TimestampUs end_us = 0;
  };
  std::vector<MeasuredRankStep> measured_steps;
  std::unique_ptr<KernelDurationSource> kernel_source;
  std::unique_ptr<CommDurationSource> comm_source;
  // How the report names process groups and streams; workloads that know better set them.
  report::GroupKindOf group_kind = report::group_kind;
  report::StreamLabelOf stream_label = [](StreamId stream) {
    return "stream " + std::to_string(stream);
  };
  // Adds the workload's figures (LLM: throughput, MFU, memory; DLRM: its rank load) to the
  // generic report.
  std::function<void(std::span<const RankResult>, report::RunReport&)> complete_report;
  // Workload detail sections by `--detail` name ("memory", "workload"), rendered on request.
  std::map<std::string, std::function<std::string(std::span<const RankResult>)>> detail_sections;
};

// Simulated ranks: the Kineto trace count, or the synthetic rank count (default: one per
// MPI process).
int simulated_world_size(const SimulateOptions& options, int mpi_size);

// `world_size` from simulated_world_size(); `local_ranks` the ranks this process simulates.
SimulationInputs load_simulation_inputs(const SimulateOptions& options, int world_size,
                                        const std::vector<int>& local_ranks);

}  // namespace perfsim::scenario
