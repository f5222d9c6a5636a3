// `perfsim trace summary FILE`: what a trace holds (rank 0 only).
#include <iostream>
#include <memory>
#include <string>

#include "io/input_file.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "trace_io/kineto_loader.hpp"
#include "trace_io/trace_format.hpp"
#include "trace_io/trace_summary.hpp"

namespace perfsim::cli {
namespace {

void print_kineto_notes(const trace_io::KinetoLoadReport& report) {
  std::cout << "kineto events: " << report.cpu_ops << " cpu_op, " << report.annotations
            << " user_annotation, " << report.runtime_calls << " runtime calls, "
            << report.gpu_activities << " GPU activities\n";
  if (report.runtime_calls_outside_ops > 0)
    std::cout << "  note: " << report.runtime_calls_outside_ops
              << " runtime calls lie outside every op (not kept)\n";
  if (report.events_outside_step > 0)
    std::cout << "  note: " << report.events_outside_step
              << " CPU events lie outside the ProfilerStep window (kept)\n";
  if (report.unattributed_gpu_activities > 0)
    std::cout << "  note: " << report.unattributed_gpu_activities
              << " GPU activities have no runtime call in the trace (launched before profiling)\n";
  if (report.partial_overlaps > 0)
    std::cout << "  note: " << report.partial_overlaps
              << " events overlap an op without nesting in it\n";
  if (report.annotations_made_working > 0)
    std::cout << "  note: " << report.annotations_made_working
              << " annotations launch GPU work themselves and are treated as ops\n";
  if (report.unidentified_collectives > 0)
    std::cout << "  note: " << report.unidentified_collectives
              << " NCCL kernels belong to no recognisable collective\n";
  if (report.profiler_steps > 1)
    std::cout << "  note: " << report.profiler_steps
              << " ProfilerStep annotations; the first is the measured step\n";
}

}  // namespace

void add_trace_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* trace = app.add_subcommand("trace", "Inspect trace files");
  trace->require_subcommand(1);
  CLI::App* summary = trace->add_subcommand(
      "summary",
      "Print op, kernel (by category and stream) and collective counts of a Kineto trace, a "
      "PyTorch execution trace or a Chakra protobuf trace (.et; format detected from the content)");
  auto file = std::make_shared<std::string>();
  summary->add_option("FILE", *file, "trace: .json, .json.gz, .et or archive.tar.gz:member")
      ->required();
  registry.add(summary, RankScope::kRankZeroOnly, [file](const CommandContext&) -> int {
    io::InputBytes input = io::read_input(*file);
    if (trace_io::detect_trace_format(input) == trace_io::TraceFormat::kKineto) {
      trace_io::KinetoLoad load = trace_io::load_kineto_trace_with_report(input);
      std::cout << trace_io::format_trace_summary(trace_io::summarize_trace(load.trace));
      print_kineto_notes(load.report);
    } else {
      std::cout << trace_io::format_trace_summary(
          trace_io::summarize_trace(trace_io::load_trace(input)));
    }
    return 0;
  });
}

}  // namespace perfsim::cli
