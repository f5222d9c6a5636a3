#pragma once
// `perfsim validate runs`: every row of a measured-run table (validation/run_table.hpp)
// simulated as a generated LLM iteration (one representative rank per pipeline stage, exact on
// the symmetric topologies the rows name), then compared with its measurement, optionally with
// the end-to-end calibration fitted out of sample by K-fold cross-validation.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "memory/device_memory.hpp"
#include "scenario/llm_simulate_options.hpp"
#include "scenario/llm_simulation.hpp"
#include "scenario/simulation_inputs.hpp"
#include "validation/end_to_end_calibration.hpp"
#include "validation/run_statistics.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {

struct RunValidationRequest {
  std::string assets_path;  // fitted collective curves; "" = shipped where they cover, else nominal
  // Used when folds == 0; empty fitted_on = no calibration.
  validation::EndToEndCalibration calibration;
  // When folds == 0, instead of `calibration`: each row takes the shipped calibration of its
  // device's platform (calibration_argument("", device), validation::shipped_calibration_for).
  bool shipped_calibration_by_device = false;
  int folds = 0;  // > 1: K-fold cross-validation of the calibration, held-fold predictions only
  int jobs = 1;
  // Fits (folds or --fit-calibration) search the per backward op host cost apart from the
  // per forward op one (validation::FitAxes::backward_over_forward).
  bool fit_backward_host_cost = false;
  // What `calibration` was read from: a file, or "none" (the explained rows' --calibration).
  std::string calibration_argument = "none";
  // Rows (by name) to explain: their simulate options and the simulation behind their
  // prediction are kept (RunExplanation). Not with cross-validation, whose per-fold
  // calibrations exist only in memory.
  std::vector<std::string> explain;
  // Called as rows are generated and simulated ("runs"), and as folds are fitted ("folds").
  std::function<void(const char* stage, std::size_t done, std::size_t total)> progress;
};

struct RunPrediction {
  const validation::RunRow* row = nullptr;
  std::string layout;       // "TP 2 x PP 2 x DP 2, mb 4, full recompute"
  double measured_s = 0;    // converted to an iteration time
  double simulated_s = 0;   // the engine's iteration without calibration
  double predicted_s = 0;   // with the calibration that applies to this row
  double signed_error = 0;  // predicted / measured - 1
  int fold = -1;            // the held fold it was predicted in (cross-validation)
  std::string skipped;      // non-empty: not simulated, and why
  // The memory closed form's worst pipeline stage against the row's device (perfsim memory
  // --llm). Every row ran, so a layout that does not fit is a miss of the memory model or of
  // the device file's capacity.
  Bytes memory_peak_bytes = 0;
  memory::MemoryVerdict memory;
};

struct GroupStatistics {
  std::string group;
  std::size_t runs = 0;
  double spearman = 0;  // NaN below three runs
  double regret = 0;    // measured time of perfsim's pick / measured best - 1
};

// One explained row (RunValidationRequest::explain): the `perfsim simulate` options that give
// its prediction and the simulation that gave it.
struct RunExplanation {
  const validation::RunRow* row = nullptr;
  std::size_t prediction = 0;  // its index in RunValidationReport::predictions
  LlmSimulateOptions options;  // unset when the row was skipped (its prediction says why)
  // The calibration's fixed per-iteration term: in the prediction, not in simulate's iteration.
  double iteration_term_us = 0;
  // The pipeline-stage representatives' inputs (report hooks: throughput, memory, group
  // names) and their results at the prediction's calibration; null when skipped.
  std::shared_ptr<const SimulationInputs> inputs;
  std::vector<RankResult> results;
};

struct RunValidationReport {
  std::string source;
  std::vector<RunPrediction> predictions;                          // in table order
  validation::ErrorSummary errors;                                 // over simulated rows
  std::vector<GroupStatistics> groups;                             // by name
  std::vector<validation::EndToEndCalibration> fold_calibrations;  // cross-validation only
  validation::EndToEndCalibration calibration;  // the one applied (no cross-validation), or the
                                                // fit on every row (--fit-calibration)
  // The shipped calibrations applied (shipped_calibration_by_device), in the order rows first
  // took them, with the devices of those rows; empty otherwise.
  std::vector<std::pair<validation::EndToEndCalibration, std::vector<std::string>>>
      calibrations_by_device;
  bool cross_validated = false;
  std::vector<RunExplanation> explanations;  // in the order asked for
};

RunValidationReport validate_runs(const validation::RunTable& table,
                                  const RunValidationRequest& request);

// The `perfsim simulate` options a row describes: every cell as the simulate option it maps
// to, the node count resolved against the topology, and the collective assets and calibration
// argument ("none", "" for the shipped one, or a file) given. scenario_of_run reads these
// options as simulate does, so that simulate with them predicts what validate runs predicts.
// Throws InputError naming `table` and the row's line.
LlmSimulateOptions simulate_options_of_run(const validation::RunRow& row, const std::string& table,
                                           const std::string& assets_path,
                                           const std::string& calibration);

// The generated-LLM scenario a row describes (model, layout with the row's switches, topology
// resized to its nodes, device); throws InputError naming `table` and the row's line.
LlmScenario scenario_of_run(const validation::RunRow& row, const std::string& table,
                            const std::string& assets_path = "");

// Fits the calibration on every simulated row of the table (in-sample by definition).
validation::EndToEndCalibration fit_calibration_on(const validation::RunTable& table,
                                                   const RunValidationRequest& request);

// Narayanan et al. 2021 eq. 3 generalized to GQA and gated FFNs: model FLOPs of one iteration
// with full recomputation counted (4 forward passes of every layer, 3 of the logits).
// For GPT shapes: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double narayanan_model_flops(const generators::llm::TransformerConfig& model, int global_batch);

}  // namespace perfsim::scenario
