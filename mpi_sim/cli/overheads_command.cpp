// `perfsim overheads extract KINETO_FILES... -o overheads.json`: host overheads T1..T5 of
// seed 000 Sec. 4.3.3, merged over every input into one shared set (rank 0 only).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "io/input_file.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "overheads/overhead_asset.hpp"
#include "overheads/overhead_extractor.hpp"
#include "overheads/overhead_report.hpp"
#include "trace_io/kineto_loader.hpp"

namespace perfsim::cli {
namespace {

struct ExtractOptions {
  std::vector<std::string> inputs;
  std::string output;
  int top = 10;
  double profiler_cpu_overhead_us = LaunchParameters{}.profiler_cpu_overhead_us;
};

// A whole archive stands for all its .json members; anything else is one trace.
std::vector<io::InputBytes> read_traces(const std::string& spec) {
  if (io::is_archive_path(spec))
    return io::read_archive_members(spec, ".json");
  std::vector<io::InputBytes> one;
  one.push_back(io::read_input(spec));
  return one;
}

int extract(const ExtractOptions& options) {
  LaunchParameters launch;
  launch.profiler_cpu_overhead_us = options.profiler_cpu_overhead_us;
  std::vector<HostOverheads> sets;
  for (const std::string& spec : options.inputs) {
    for (const io::InputBytes& input : read_traces(spec)) {
      Trace trace = trace_io::load_kineto_trace(input);
      sets.push_back(overheads::extract_host_overheads(trace, launch));
      std::cout << "extracted " << input.source << " (rank " << trace.rank << ")\n";
    }
  }
  HostOverheads shared = overheads::merge_host_overheads(sets);
  std::cout << overheads::format_overheads_table(shared, options.top);
  overheads::save_host_overheads(shared, options.output);
  std::cout << "wrote " << options.output << "\n";
  return 0;
}

}  // namespace

void add_overheads_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* overheads = app.add_subcommand("overheads", "Host overheads T1..T5 (seed 000 4.3.3)");
  overheads->require_subcommand(1);
  CLI::App* extract_command = overheads->add_subcommand(
      "extract",
      "Extract T1..T5 from Kineto traces (1.5 IQR outliers removed per trace), merge them into "
      "one shared set and write it as JSON");
  auto options = std::make_shared<ExtractOptions>();
  extract_command
      ->add_option("KINETO_FILES", options->inputs,
                   "Kineto traces: .json, .json.gz, archive.tar.gz:member, or a whole "
                   "archive.tar.gz (all its .json members)")
      ->required();
  extract_command->add_option("-o,--output", options->output, "overhead asset to write (JSON)")
      ->required();
  extract_command->add_option("--top", options->top, "ops listed per overhead type")
      ->capture_default_str();
  extract_command
      ->add_option("--profiler-cpu-overhead-us", options->profiler_cpu_overhead_us,
                   "profiler cost of one recorded CPU event, removed from every sample")
      ->capture_default_str();
  registry.add(extract_command, RankScope::kRankZeroOnly,
               [options](const CommandContext&) -> int { return extract(*options); });
}

}  // namespace perfsim::cli
