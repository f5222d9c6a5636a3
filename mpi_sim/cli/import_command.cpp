// perfsim import nccl-tests FILES... -o bench.h5: nccl-tests logs into benchmark HDF5.
#include <iostream>
#include <vector>

#include "benchmark_data/collective_benchmark_table.hpp"
#include "collectives/bus_factor.hpp"
#include "collectives/collective_csv.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "mpi_sim/cli/command_line.hpp"

namespace perfsim::cli {
namespace {

struct ImportOptions {
  std::vector<std::string> files;
  std::string output;
  bool strict = false;
};

int run_import(const ImportOptions& options) {
  bool first = true;
  int warnings = 0;
  // Every log is read before the output is touched: a bad log leaves the old file as it was.
  std::vector<collectives::NcclTestsLog> logs;
  for (const auto& file : options.files) {
    collectives::NcclTestsLog& log = logs.emplace_back();
    if (file.size() > 4 && file.substr(file.size() - 4) == ".csv")
      log.sweep = collectives::read_collective_csv(file);  // vTrain's nccl-tests CSV
    else
      log = collectives::read_nccl_tests_log(file);
  }
  for (const collectives::NcclTestsLog& log : logs) {
    for (const auto& warning : log.warnings)
      std::cerr << "perfsim: warning: " << warning << "\n";
    warnings += static_cast<int>(log.warnings.size());
    benchmark_data::write_collective_sweep(options.output, log.sweep, first);
    first = false;
    std::cout << options.output << ":" << benchmark_data::kCollectiveBenchmarkGroup << "/"
              << log.sweep.name << ": " << collective_name(log.sweep.kind) << ", "
              << log.sweep.n_ranks << " GPUs on " << log.sweep.n_nodes << " node(s), "
              << log.sweep.samples.size() << " samples"
              << (log.sweep.time_derived_from_busbw ? " (time derived from busbw)" : "") << "\n";
  }
  if (options.strict && warnings > 0) {
    std::cerr << "perfsim: error: " << warnings << " warning(s) with --strict\n";
    return 2;
  }
  return 0;
}

}  // namespace

void add_import_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* import = app.add_subcommand("import", "Import measurements into benchmark HDF5");
  import->require_subcommand(1);
  CLI::App* nccl = import->add_subcommand(
      "nccl-tests",
      "nccl-tests logs (current and 2019 formats, out-of-place and in-place columns, "
      "busbw-only tables; .csv: vTrain's <collective>-<N>gpu.csv) -> "
      "/benchmarks/collective/<file stem>");
  auto options = std::make_shared<ImportOptions>();
  nccl->add_option("files", options->files, "nccl-tests output files")
      ->required()
      ->check(CLI::ExistingFile);
  nccl->add_option("-o,--output", options->output, "benchmark HDF5 to write (replaced)")
      ->required();
  nccl->add_flag("--strict", options->strict, "fail when any file produced a warning");
  registry.add(nccl, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_import(*options); });
}

}  // namespace perfsim::cli
