// perfsim shard: evaluate every embedding-table sharder of seed 001 Table III for a DLRM config
// by simulating one training iteration per sharder, rank them by predicted iteration time
// (seed 001 Sec. VI-A), print the per-rank load and the chosen plan.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "mpi_sim/cli/command_line.hpp"
#include "mpi_sim/cli/shipped_config_option.hpp"
#include "mpi_sim/cli/topology_size_options.hpp"
#include "perfsim/error.hpp"
#include "scenario/dlrm_simulation.hpp"

namespace perfsim::cli {
namespace {

namespace dlrm = generators::dlrm;
using Clock = std::chrono::steady_clock;

struct ShardOptions {
  scenario::DlrmSimulateOptions dlrm;
  scenario::LlmSimulateOptions shared;  // --topology, --device, --assets
};

struct Evaluation {
  dlrm::Sharder sharder;
  std::string failure;  // why the sharder could not place the tables ("" = it did)
  scenario::DlrmScenario scenario;
  std::vector<RankResult> results;
  double iteration_us = 0;
  double wall_s = 0;
};

double category_us(const RankResult& result, KernelCategory category) {
  return result.by_category_us[static_cast<std::size_t>(category)];
}

std::string plan_text(const scenario::DlrmScenario& scenario) {
  std::string out;
  for (int rank = 0; rank < scenario.config.ranks; ++rank) {
    out += "  rank " + std::to_string(rank) + ":";
    for (int t : scenario.plan.tables_of_rank[rank])
      out += " " + scenario.config.tables[t].name;
    out += "\n";
  }
  return out;
}

int run_shard(const ShardOptions& options) {
  const auto start = Clock::now();
  std::vector<Evaluation> evaluations;
  std::optional<InputError> first_failure;
  for (dlrm::Sharder sharder : dlrm::all_sharders()) {
    const auto sharder_start = Clock::now();
    scenario::DlrmSimulateOptions dlrm_options = options.dlrm;
    dlrm_options.sharder = std::string(dlrm::sharder_name(sharder));
    Evaluation evaluation{sharder, "", {}, {}, 0, 0};
    try {
      evaluation.scenario = scenario::read_dlrm_scenario(dlrm_options, options.shared);
    } catch (const InputError& error) {
      // A plan that does not fit the memory cap fails this sharder only.
      if (error.location().rfind("/tables/", 0) != 0)
        throw;
      evaluation.failure = error.problem();
      if (!first_failure)
        first_failure = error;
      evaluations.push_back(std::move(evaluation));
      continue;
    }
    evaluation.results = scenario::simulate_dlrm_in_process(evaluation.scenario);
    for (const RankResult& result : evaluation.results)
      evaluation.iteration_us = std::max(evaluation.iteration_us, result.iteration_us);
    evaluation.wall_s = std::chrono::duration<double>(Clock::now() - sharder_start).count();
    evaluations.push_back(std::move(evaluation));
  }
  const bool any_placed = std::any_of(evaluations.begin(), evaluations.end(),
                                      [](const Evaluation& e) { return e.failure.empty(); });
  if (!any_placed)
    throw *first_failure;
  std::stable_sort(evaluations.begin(), evaluations.end(),
                   [](const Evaluation& a, const Evaluation& b) {
                     if (a.failure.empty() != b.failure.empty())
                       return a.failure.empty();
                     return a.iteration_us < b.iteration_us;
                   });
  const Evaluation& best = evaluations.front();
  const dlrm::DlrmConfig& config = best.scenario.config;
  char line[320];
  std::string cap = "none";
  if (config.memory_cap_bytes.value_or(0) > 0) {
    std::snprintf(line, sizeof(line), "%.3f GB",
                  static_cast<double>(*config.memory_cap_bytes) / 1e9);
    cap = line;
  }
  std::cout << "perfsim shard: " << config.name << " (" << config.file << "), "
            << config.tables.size() << " tables on " << config.ranks << " GPUs, batch "
            << config.batch_per_gpu << " per GPU; " << best.scenario.topology.name << ", "
            << best.scenario.device_source << "; memory cap " << cap << " per GPU\n\n";
  std::snprintf(line, sizeof(line), "%4s  %-20s %12s %12s %12s %12s %10s\n", "#", "sharder",
                "iter_ms", "emb_max_ms", "emb_min_ms", "GB_max", "wall_s");
  std::cout << line;
  int position = 0;
  for (const Evaluation& evaluation : evaluations) {
    ++position;
    if (!evaluation.failure.empty()) {
      std::cout << "   -  " << dlrm::sharder_name(evaluation.sharder)
                << ": does not fit: " << evaluation.failure << "\n";
      continue;
    }
    double embedding_max = 0, embedding_min = 1e300;
    for (const RankResult& result : evaluation.results) {
      const double us = category_us(result, KernelCategory::kEmbeddingLookup);
      embedding_max = std::max(embedding_max, us);
      embedding_min = std::min(embedding_min, us);
    }
    const Bytes most = *std::max_element(evaluation.scenario.plan.bytes_of_rank.begin(),
                                         evaluation.scenario.plan.bytes_of_rank.end());
    std::snprintf(line, sizeof(line), "%4d  %-20s %12.3f %12.3f %12.3f %12.3f %10.3f\n", position,
                  std::string(dlrm::sharder_name(evaluation.sharder)).c_str(),
                  evaluation.iteration_us / 1000, embedding_max / 1000, embedding_min / 1000,
                  static_cast<double>(most) / 1e9, evaluation.wall_s);
    std::cout << line;
  }
  std::cout << "\nchosen: " << dlrm::sharder_name(best.sharder) << " (predicted iteration "
            << best.iteration_us / 1000 << " ms)\nper-rank load of the chosen plan:\n"
            << scenario::format_rank_load(best.scenario, best.results) << "plan:\n"
            << plan_text(best.scenario);
  std::snprintf(line, sizeof(line),
                "\nevaluated %zu sharders in %.3f s wall (generation + simulation)\n",
                evaluations.size(), std::chrono::duration<double>(Clock::now() - start).count());
  std::cout << line;
  return 0;
}

}  // namespace

void add_shard_command(CLI::App& app, CommandRegistry& registry) {
  auto options = std::make_shared<ShardOptions>();
  CLI::App* sub = app.add_subcommand(
      "shard",
      "Rank the embedding-table sharders of seed 001 Table III for a DLRM config by simulated "
      "iteration time (seed 001 Sec. VI-A); print per-rank load and the chosen plan.");
  sub->add_option("config", options->dlrm.config_path, "DLRM config file or name in configs/dlrm")
      ->required()
      ->transform(shipped_config("dlrm"));
  sub->add_option("--topology", options->shared.topology_path,
                  "topology file or name in configs/topologies")
      ->required()
      ->transform(shipped_config("topologies"));
  add_topology_size_options(*sub, options->shared.topology_size);
  sub->add_option("--device", options->shared.device_path, "device file (configs/devices/*.json)")
      ->required();
  sub->add_option("--assets", options->shared.assets_path,
                  "fitted collective curves (`perfsim fit`); default: the shipped ones where they "
                  "cover the topology, else nominal curves");
  sub->add_option("--memory-cap-GB", options->dlrm.memory_cap_GB,
                  "embedding weights allowed per GPU, GB (default: config, else 80% of the "
                  "device's memory; 0 = no cap)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--dlrm-batch", options->dlrm.batch_per_gpu, "batch per GPU (default: config)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dlrm-tables", options->dlrm.tables, "number of tables (default: config)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dlrm-ranks", options->dlrm.ranks, "GPUs (default: config)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dlrm-pooling", options->dlrm.pooling,
                  "sampled tables: pooling factors like seed 001 Fig. 3's 2021 or 2022 data "
                  "(default: the config file's)")
      ->check(CLI::IsMember({"dlrm-2021", "dlrm-2022"}));
  sub->add_flag("--dlrm-heavy", options->dlrm.heavy_only,
                "sampled tables: every table heavy (L >= 20), seed 001 Sec. V-B1");
  sub->add_option("--dlrm-seed", options->dlrm.seed,
                  "seed of the table sampler and the random sharder (default: config)");
  registry.add(sub, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_shard(*options); });
}

}  // namespace perfsim::cli
