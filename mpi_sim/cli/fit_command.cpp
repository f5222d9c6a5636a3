// perfsim fit bench.h5 -o assets.h5: one continuous piecewise-sigmoid curve per collective
// benchmark table, with its fit errors per region (seed 001 Table I).
#include <iostream>

#include "assets/collective_curve_assets.hpp"
#include "benchmark_data/collective_benchmark_table.hpp"
#include "collectives/error_table.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "perfsim/error.hpp"

namespace perfsim::cli {
namespace {

struct FitOptions {
  std::string bench;
  std::string output;
  std::vector<std::string> tables;
};

int run_fit(const FitOptions& options) {
  std::vector<std::string> names = options.tables;
  if (names.empty())
    names = benchmark_data::list_collective_sweeps(options.bench);
  if (names.empty())
    throw InputError(options.bench, benchmark_data::kCollectiveBenchmarkGroup,
                     "no collective benchmark tables to fit");
  collectives::CurveSet curves;
  assets::ResidualsByCurve residuals;
  std::vector<collectives::ErrorTableRow> rows;
  for (const auto& name : names) {
    const auto sweep = benchmark_data::read_collective_sweep(options.bench, name);
    auto fitted = collectives::fit_sweep(sweep);
    const auto points = collectives::predict_with_curve(fitted, sweep);
    rows.push_back({name, collectives::summarize_by_region(points)});
    const auto& p = fitted.curve.parameters();
    std::cout << name << ": ts=" << p.ts_us << " us, BWmax=" << p.bwmax_GBps
              << " GB/s, m1=" << p.m1_bus_bytes << " m2=" << p.m2_bus_bytes
              << " bus bytes, L=" << p.L << " x0=" << p.x0 << " k=" << p.k << " b=" << p.b << "\n";
    residuals[name] = points;
    curves.emplace(name, std::move(fitted));
  }
  assets::write_collective_curves(options.output, curves, residuals, true);
  std::cout << "\nfit error against the fitted data (relative error of time):\n"
            << collectives::format_error_table(rows) << "wrote " << options.output << ":"
            << assets::kCollectiveCurvesTable << "\n";
  return 0;
}

}  // namespace

void add_fit_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* fit = app.add_subcommand(
      "fit", "Fit collective curves (seed 001 Sec. IV-A) to benchmark HDF5 -> model assets");
  auto options = std::make_shared<FitOptions>();
  fit->add_option("bench", options->bench, "benchmark HDF5 (perfsim import)")
      ->required()
      ->check(CLI::ExistingFile);
  fit->add_option("-o,--output", options->output, "model-assets HDF5 to write (replaced)")
      ->required();
  fit->add_option("--tables", options->tables, "fit only these tables (default: all)");
  registry.add(fit, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_fit(*options); });
}

}  // namespace perfsim::cli
