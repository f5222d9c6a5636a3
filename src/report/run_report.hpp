#pragma once
// The answer of one `simulate` run as figures, before any formatting: the first screen
// (summary_screen.hpp), the JSON and CSV forms (run_report_json.hpp) and the detail tables all
// render this one structure, so they cannot disagree.
#include <optional>
#include <string>
#include <vector>

#include "perfsim/rank_result.hpp"
#include "perfsim/units.hpp"

namespace perfsim::report {

// One line of "where the time goes": the slowest rank's share and the mean over ranks. The
// lines of one breakdown add up to the iteration time (of the slowest rank, and on average).
struct BreakdownLine {
  std::string key;         // machine name, e.g. "exposed_tp_us" without the suffix: "exposed_tp"
  std::string label;       // what the line is, e.g. "exposed tensor-parallel communication"
  std::string definition;  // one line saying how it is measured
  DurationUs slowest_rank_us = 0;
  DurationUs mean_us = 0;
};

// Model FLOPs and what they give per second (LLM workloads).
struct Throughput {
  double tokens_per_iteration = 0;
  double tokens_per_s = 0;
  double model_flops_per_iteration = 0;
  double model_tflops_per_s_per_gpu = 0;
  double peak_tflops_per_s_per_gpu = 0;  // the dense bf16/fp16 peak MFU divides by
  double mfu = 0;                        // fraction, 0..1
  std::string flops_formula;             // where the model FLOPs come from
};

// Closed-form peak memory of one pipeline stage against the device.
struct StageMemoryFigure {
  int stage = 0;
  Bytes total_bytes = 0;
  Bytes parameter_bytes = 0;
  Bytes gradient_bytes = 0;
  Bytes optimizer_bytes = 0;
  Bytes activation_bytes = 0;
  Bytes other_bytes = 0;  // FP8 weight copies and the CUDA context
};

struct MemoryFigures {
  std::string device;
  std::optional<Bytes> capacity_bytes;  // none: the device file states no capacity
  std::vector<StageMemoryFigure> stages;
  int worst_stage = 0;
  bool fits = true;
  double margin_bytes = 0;  // capacity - worst stage (negative: short by this much)
  std::string verdict;      // the memory model's own sentence for the worst stage
};

// One pipeline stage's schedule as simulated: the forward and backward of each micro-batch on
// its first rank (the HTML report's pipeline chart).
struct PipelineStageSteps {
  int stage = 0;
  int rank = 0;
  std::vector<StepSpan> steps;
};

struct RunReport {
  std::string workload;                 // "llama3-70b, TP 8 x PP 4 x DP 2, ... = 64 GPUs"
  std::vector<std::string> setup;       // further short lines about the inputs (batch, precision)
  std::vector<std::string> warnings;    // must be seen next to the answer (single-rank run, ...)
  std::vector<std::string> provenance;  // models and sources behind the figures
  int ranks = 0;
  TimestampUs iteration_us = 0;  // the slowest rank
  int slowest_rank = 0;
  DurationUs mean_iteration_us = 0;
  std::optional<Throughput> throughput;
  std::vector<BreakdownLine> breakdown;
  // 1F1B's idle fraction (P-1)/(V M+P-1) the bubble line compares with; none without a
  // pipeline.
  std::optional<double> ideal_bubble_fraction;
  std::optional<MemoryFigures> memory;
  std::vector<PipelineStageSteps> pipeline;    // empty: no pipeline, or its steps are unknown
  std::vector<std::string> available_details;  // --detail names this run can print
  std::vector<std::string> extra_sections;     // printed right after the summary (validation)
  // The simulator itself, not the workload.
  std::size_t simulated_ops = 0;
  double wall_s = 0;
  std::string results_path;  // "" = no results file
  std::string run_name;
  std::string timeline_path;
};

}  // namespace perfsim::report
