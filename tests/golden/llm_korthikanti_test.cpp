// Golden: the generated 22B and 175B models of Korthikanti et al. 2022 (arXiv:2205.05198;
// shared/data/llm/korthikanti2022.csv) simulated on the A100 80GB device file and the DGX A100
// topologies, with collective curves fitted to the shared sweeps the topologies name (vTrain's
// A100 DGX all-reduce at 2-8 GPUs for NVSwitch, the IB stand-in, the PCIe stand-in) and the
// analytical kernel models (one set of device constants for every row; nothing here is tuned per
// row).
//
// Table 4: forward and backward time of ONE transformer layer of the 22B model (TP 8, s 2048,
// b 4) in five configurations. A layer's time is measured on the simulated compute stream from
// the start of its first op to the start of the next layer's first op, so it includes the
// tensor-parallel communication the next layer waits for (the paper times whole layers too).
// The backward time includes the recomputation, as in the paper.
// Table 5: iteration time of the 22B (TP 8, one micro-batch of 4) and 175B (TP 8, PP 8,
// 64 micro-batches of 1) models with full recomputation, and with sequence parallelism plus
// selective recomputation; the 175B model with the interleaved schedule of 3 virtual stages
// the paper used (csv column pipeline_interleave_stages).
//
// Acceptance (issue 6): every number within 10 %. The table is printed whatever the outcome.
// Kernel times come from the analytical models of src/kernels with the device file as is.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "collectives/collective_csv.hpp"
#include "collectives/collective_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "devices/device_spec.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "kernels/model_duration_source.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "perfsim/rank_result.hpp"
#include "support/csv_rows.hpp"
#include "support/op_phase.hpp"
#include "validation/end_to_end_calibration.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_int_attribute;
using test_support::op_phase;

const std::filesystem::path kShared = PERFSIM_SHARED_DATA_DIR;
const std::filesystem::path kSource = PERFSIM_SOURCE_DIR;
constexpr double kTolerance = 0.10;
constexpr double kCalibratedTable4Tolerance = 0.05;  // README: with the vTrain GEMM scale
// Every row runs with ParallelConfig's defaults for what the csv does not set (no switch is
// chosen on this data). The test also prints Table 4 with the backward TP collectives
// overlapped beside the GEMMs (Megatron's asynchronous all-reduce; each GEMM under a
// collective runs on the SMs the NCCL kernel leaves, ParallelConfig::comm_sms) and with
// overlap free of contention, for comparison.

std::string require(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error("missing fixture " + path.string());
  return path.string();
}

// Rows of the csv as column -> value maps.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  return testing::read_csv_rows(require(path));
}

collectives::CurveSet fitted_curves() {
  collectives::CurveSet curves;
  for (const char* name :
       {"azure-nda100v4-1node-allreduce-busbw.txt", "h100-ib400-2node-allreduce.txt"}) {
    auto curve = collectives::fit_sweep(
        collectives::read_nccl_tests_log(require(kShared / "nccl-tests" / name)).sweep);
    curves.emplace(curve.name, std::move(curve));
  }
  for (int gpus = 2; gpus <= 8; ++gpus) {
    const std::string name = "allreduce-" + std::to_string(gpus) + "gpu.csv";
    auto curve = collectives::fit_sweep(collectives::read_collective_csv(
        require(kShared / "collectives" / "a100-dgx-allreduce" / name)));
    curves.emplace(curve.name, std::move(curve));
  }
  return curves;
}

struct Simulated {
  std::vector<Trace> traces;
  std::vector<RankResult> results;
};

// gemm_time_scale multiplies every GEMM kernel's time (the calibration's device term).
Simulated simulate(const TransformerConfig& model, const ParallelConfig& parallel,
                   const std::string& topology_file, bool timeline, double gemm_time_scale = 1) {
  static const collectives::CurveSet curves = fitted_curves();
  static const devices::DeviceSpec device =
      devices::load_device_file(require(kSource / "configs/devices/A100-80GB.json"));
  const kernels::ModelDurationSource kernel_source{kernels::KernelPredictor(device)};
  std::vector<ProcessGroup> groups = all_process_groups(parallel);
  for (ProcessGroup& group : pipeline_peer_groups(parallel))
    groups.push_back(std::move(group));
  const collectives::CollectiveModel comm_source(
      topology::load_topology(require(kSource / "configs/topologies" / topology_file)), curves,
      groups);
  Simulated run;
  std::vector<engine::RankProgram> programs;
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    Trace trace = generate_llm_rank(model, parallel, rank);
    programs.push_back(engine::build_rank_program(trace, rank, parallel.world_size(),
                                                  {&kernel_source, &comm_source, {}}));
    for (engine::SimOp& op : programs.back().ops.mutable_ops())
      for (engine::SimKernel& kernel : op.kernels)
        if (kernel.category == KernelCategory::kGemm)
          kernel.duration_us *= gemm_time_scale;
    if (timeline)
      run.traces.push_back(std::move(trace));
  }
  HostOverheads overheads;
  overheads.launch.kernel_gap_us = 1;
  engine::InProcessClockSync sync;
  std::vector<engine::RankSimulator> simulators;
  for (const auto& program : programs)
    simulators.emplace_back(program, overheads, sync, timeline);
  engine::run_to_completion(simulators, sync);
  for (const auto& simulator : simulators)
    run.results.push_back(simulator.result());
  return run;
}

struct LayerTimes {
  double forward_ms = 0;
  double backward_ms = 0;
};

// Every generated compute op launches one kernel on the compute stream, in op order (host-only
// ops such as get_batch launch none), so the
// k-th compute-stream slice of the timeline is the k-th compute op of the trace.
LayerTimes layer_times(const Trace& trace, const RankResult& result, int layer) {
  std::vector<const Op*> compute_ops;
  for (const Op& op : trace.ops)
    if (!op.comm && !op.kernels.empty())
      compute_ops.push_back(&op);
  std::vector<const TimelineSlice*> slices;
  for (const TimelineSlice& slice : result.timeline)
    if (slice.lane == kDefaultComputeStream)
      slices.push_back(&slice);
  EXPECT_EQ(compute_ops.size(), slices.size());
  auto first_start = [&](int wanted_layer, bool forward) {
    for (std::size_t i = 0; i < compute_ops.size() && i < slices.size(); ++i) {
      const std::string phase = op_phase(*compute_ops[i]);
      const bool is_forward = phase == "forward";
      if (op_int_attribute(*compute_ops[i], "layer") == wanted_layer && is_forward == forward)
        return slices[i]->start_us;
    }
    ADD_FAILURE() << "no op of layer " << wanted_layer;
    return 0.0;
  };
  return {(first_start(layer + 1, true) - first_start(layer, true)) / 1000,
          (first_start(layer - 1, false) - first_start(layer, false)) / 1000};
}

TransformerConfig model_file(const std::string& name) {
  return load_transformer_config(require(kSource / "configs/models" / (name + ".json")));
}

double relative_error(double predicted, double published) {
  return (predicted - published) / published;
}

TEST(LlmKorthikanti, Table4LayerTimesAndTable5IterationTimes) {
  const auto rows = read_csv((kShared / "llm/korthikanti2022.csv").string());
  const TransformerConfig model_22b = model_file("korthikanti-22b");
  const TransformerConfig model_175b = model_file("korthikanti-175b");
  std::string table = "Korthikanti et al. 2022 vs perfsim (A100 80GB, DGX A100, fitted curves)\n";
  char line[200];
  std::snprintf(line, sizeof(line), "%-28s %9s %9s %9s %9s %8s %8s\n", "Table 4 (22B layer, ms)",
                "fwd", "fwd pub", "bwd", "bwd pub", "fwd err", "bwd err");
  table += line;
  std::vector<std::pair<std::string, double>> errors;
  for (const auto& row : rows) {
    if (row.at("record") != "table4_layer")
      continue;
    ParallelConfig parallel{.tp = 8, .pp = 1, .dp = 1};
    parallel.sequence_parallel = row.at("sequence_parallel") == "yes";
    parallel.recompute = parse_recompute(row.at("activation_recompute"), "csv");
    const Simulated run = simulate(model_22b, parallel, "dgx-a100.json", true);
    const LayerTimes times = layer_times(run.traces[0], run.results[0], model_22b.layers / 2);
    const double forward = std::stod(row.at("layer_forward_ms"));
    const double backward = std::stod(row.at("layer_backward_ms"));
    const std::string name = row.at("experiment");
    errors.emplace_back(name + " forward", relative_error(times.forward_ms, forward));
    errors.emplace_back(name + " backward", relative_error(times.backward_ms, backward));
    std::snprintf(line, sizeof(line), "%-28s %9.2f %9.2f %9.2f %9.2f %+7.1f%% %+7.1f%%\n",
                  name.c_str(), times.forward_ms, forward, times.backward_ms, backward,
                  100 * errors[errors.size() - 2].second, 100 * errors.back().second);
    table += line;
  }
  std::snprintf(line, sizeof(line), "%-28s %9s %9s %9s %9s %8s %8s\n", "Table 5 (iteration, s)",
                "full", "full pub", "sp+sel", "pub", "err", "err");
  table += line;
  for (const auto& row : rows) {
    if (row.at("record") != "table3_table5_model")
      continue;
    const bool big = row.at("model") == "175B";
    const TransformerConfig& model = big ? model_175b : model_22b;
    double predicted[2];
    for (int present = 0; present < 2; ++present) {
      ParallelConfig parallel{.tp = 8, .pp = big ? 8 : 1, .dp = 1};
      const std::string interleave = row.at("pipeline_interleave_stages");
      parallel.virtual_stages = interleave.empty() ? 1 : std::stoi(interleave);
      // The paper's Megatron-LM (2022) had no overlap_p2p_comm (added, and later made the
      // default, in 2023): its interleaved receives wait just before their step.
      parallel.overlap_p2p_comm = false;
      parallel.sequence_parallel = present == 1;
      parallel.recompute = present == 1 ? Recompute::kSelective : Recompute::kFull;
      const Simulated run =
          simulate(model, parallel, big ? "dgx-a100-8node.json" : "dgx-a100.json", false);
      predicted[present] = 0;
      for (const RankResult& result : run.results)
        predicted[present] = std::max(predicted[present], result.iteration_us / 1e6);
    }
    const double full = std::stod(row.at("iter_time_full_recompute_s"));
    const double present = std::stod(row.at("iter_time_seqpar_selective_s"));
    errors.emplace_back(row.at("model") + " iteration, full recompute",
                        relative_error(predicted[0], full));
    errors.emplace_back(row.at("model") + " iteration, sequence parallel + selective",
                        relative_error(predicted[1], present));
    std::snprintf(line, sizeof(line), "%-28s %9.3f %9.3f %9.3f %9.3f %+7.1f%% %+7.1f%%\n",
                  row.at("model").c_str(), predicted[0], full, predicted[1], present,
                  100 * errors[errors.size() - 2].second, 100 * errors.back().second);
    table += line;
  }
  for (int comm_sms : {ParallelConfig{}.comm_sms, 0}) {
    table += "Table 4 again with the backward TP collectives overlapped, " +
             (comm_sms > 0 ? std::to_string(comm_sms) + " SMs held by each NCCL kernel"
                           : std::string("free of contention")) +
             " (information only):\n";
    for (const auto& row : rows) {
      if (row.at("record") != "table4_layer")
        continue;
      ParallelConfig parallel{.tp = 8, .pp = 1, .dp = 1};
      parallel.sequence_parallel = row.at("sequence_parallel") == "yes";
      parallel.recompute = parse_recompute(row.at("activation_recompute"), "csv");
      parallel.overlap_tp_backward = true;
      parallel.comm_sms = comm_sms;
      const Simulated run = simulate(model_22b, parallel, "dgx-a100.json", true);
      const LayerTimes times = layer_times(run.traces[0], run.results[0], model_22b.layers / 2);
      const double forward = std::stod(row.at("layer_forward_ms"));
      const double backward = std::stod(row.at("layer_backward_ms"));
      std::snprintf(line, sizeof(line), "%-28s %9.2f %9.2f %9.2f %9.2f %+7.1f%% %+7.1f%%\n",
                    row.at("experiment").c_str(), times.forward_ms, forward, times.backward_ms,
                    backward, 100 * relative_error(times.forward_ms, forward),
                    100 * relative_error(times.backward_ms, backward));
      table += line;
    }
  }
  std::cout << table;
  ASSERT_EQ(errors.size(), 5u * 2 + 2u * 2) << "the csv lost rows";
  for (const auto& [what, error] : errors)
    EXPECT_LE(std::abs(error), kTolerance) << what << ": " << 100 * error << " %";
}

// Table 4 with the A100 GEMM time scale of the shipped calibration
// (configs/assets/llm_calibration.json), which was fitted on vTrain's single-node runs only:
// out of sample here. No host costs (a layer's time on the compute stream is GPU-bound at this
// size); Table 5 with the whole calibration is golden_validation_korthikanti_runs_test.
TEST(LlmKorthikanti, Table4LayerTimesWithVtrainGemmCalibration) {
  const validation::EndToEndCalibration calibration =
      validation::load_calibration((kSource / "configs/assets/llm_calibration.json").string());
  ASSERT_EQ(calibration.fitted_on, "vtrain-singlenode-a100.csv") << "out of sample only then";
  ASSERT_EQ(calibration.device, "A100-80GB");
  const double scale = calibration.host.gemm_time_scale;
  const auto rows = read_csv((kShared / "llm/korthikanti2022.csv").string());
  const TransformerConfig model_22b = model_file("korthikanti-22b");
  std::cout << "Table 4 (22B layer, ms) with A100 GEMM time x" << scale << ":\n";
  int checked = 0;
  for (const auto& row : rows) {
    if (row.at("record") != "table4_layer")
      continue;
    ParallelConfig parallel{.tp = 8, .pp = 1, .dp = 1};
    parallel.sequence_parallel = row.at("sequence_parallel") == "yes";
    parallel.recompute = parse_recompute(row.at("activation_recompute"), "csv");
    const Simulated run = simulate(model_22b, parallel, "dgx-a100.json", true, scale);
    const LayerTimes times = layer_times(run.traces[0], run.results[0], model_22b.layers / 2);
    const double forward_error =
        relative_error(times.forward_ms, std::stod(row.at("layer_forward_ms")));
    const double backward_error =
        relative_error(times.backward_ms, std::stod(row.at("layer_backward_ms")));
    std::cout << "  " << row.at("experiment") << ": forward " << 100 * forward_error
              << " %, backward " << 100 * backward_error << " %\n";
    EXPECT_LE(std::abs(forward_error), kCalibratedTable4Tolerance) << row.at("experiment");
    EXPECT_LE(std::abs(backward_error), kCalibratedTable4Tolerance) << row.at("experiment");
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

}  // namespace
}  // namespace perfsim::generators::llm
