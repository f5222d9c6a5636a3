// `perfsim generate`: writes the per-rank traces of a generated workload (LLM or DLRM) as
// PyTorch execution traces (JSON) or MLCommons Chakra protobuf traces (--format chakra), for
// other tools or for `perfsim simulate --et`. Every MPI process writes its own block of ranks,
// so `mpirun -n 8 perfsim generate ...` writes 1024 ranks in parallel.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>

#include "generators/dlrm/dlrm_rank_generator.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "mpi_sim/cli/workload_options.hpp"
#include "perfsim/error.hpp"
#include "scenario/dlrm_simulation.hpp"
#include "scenario/llm_simulation.hpp"
#include "trace_io/chakra_et.hpp"
#include "trace_io/execution_trace_writer.hpp"

namespace perfsim::cli {
namespace {

namespace llm = generators::llm;

struct GenerateOptions {
  scenario::LlmSimulateOptions llm;
  scenario::DlrmSimulateOptions dlrm;
  std::string output_dir = "perfsim-traces";
  std::string format = "json";  // json (PyTorch ET) or chakra (protobuf .et)
  std::vector<int> ranks;       // empty: all
};

// Chakra tools read PREFIX.<rank>.et (ASTRA-sim: --workload-configuration=DIR/perfsim).
constexpr const char* kChakraPrefix = "perfsim";

// One workload, either kind: what it is, its rank count and a per-rank trace generator.
struct GeneratedWorkload {
  std::string description;
  int world_size = 0;
  std::function<Trace(int rank)> generate;
};

GeneratedWorkload read_workload(const GenerateOptions& options) {
  if (options.llm.requested() == options.dlrm.requested()) {
    throw InputError("<command line>", "--model / --dlrm",
                     "give exactly one workload: --model (LLM) or --dlrm (DLRM)");
  }
  if (options.dlrm.requested()) {
    auto scenario = std::make_shared<scenario::DlrmScenario>(
        scenario::read_dlrm_scenario(options.dlrm, options.llm));
    return {"DLRM " + scenario->config.name + ", " + std::to_string(scenario->config.ranks) +
                " ranks, sharder " + options.dlrm.sharder,
            scenario->config.ranks, [scenario](int rank) {
              return generators::dlrm::generate_dlrm_rank(scenario->config, scenario->plan, rank);
            }};
  }
  auto workload =
      std::make_shared<const scenario::LlmWorkload>(scenario::read_llm_workload(options.llm));
  return {workload->model.name + ", " + scenario::describe_layout(workload->parallel),
          workload->parallel.world_size(), [workload](int rank) {
            return llm::generate_llm_rank(workload->model, workload->parallel, rank);
          }};
}

std::string trace_file_name(const std::string& format, int rank) {
  if (format == "chakra")
    return chakra_et_file_name(kChakraPrefix, rank);
  char name[64];
  std::snprintf(name, sizeof name, "rank%05d.et.json", rank);
  return name;
}

int run_generate(const GenerateOptions& options, const CommandContext& context) {
  const auto start = std::chrono::steady_clock::now();
  const bool chakra = options.format == "chakra";
  if (chakra && !chakra_et_available()) {
    throw RuntimeFailure(
        "--format chakra: perfsim was built without protobuf (install libprotobuf-dev and "
        "protobuf-compiler, then re-run cmake)");
  }
  const GeneratedWorkload workload = read_workload(options);
  std::vector<int> ranks = options.ranks;
  if (ranks.empty()) {
    for (int rank = 0; rank < workload.world_size; ++rank)
      ranks.push_back(rank);
  }
  for (int rank : ranks) {
    if (rank < 0 || rank >= workload.world_size) {
      throw InputError(
          "--ranks", std::to_string(rank),
          "rank outside the workload's " + std::to_string(workload.world_size) + " ranks");
    }
  }
  std::filesystem::create_directories(options.output_dir);
  // A block of ranks per process, in rank order.
  const auto processes = static_cast<std::size_t>(context.processes.size());
  const std::size_t per_process = (ranks.size() + processes - 1) / processes;
  const std::size_t first =
      std::min(ranks.size(), per_process * static_cast<std::size_t>(context.processes.rank()));
  const std::size_t last = std::min(ranks.size(), first + per_process);
  long long bytes = 0;
  for (std::size_t i = first; i < last; ++i) {
    const Trace trace = workload.generate(ranks[i]);
    const std::string path =
        (std::filesystem::path(options.output_dir) / trace_file_name(options.format, ranks[i]))
            .string();
    if (chakra)
      write_chakra_et_file(trace, path);
    else
      write_execution_trace_file(trace, path);
    bytes += static_cast<long long>(std::filesystem::file_size(path));
    if (context.processes.is_root() && (i - first + 1) % 16 == 0) {
      std::cerr << "perfsim generate: process 0 wrote " << (i - first + 1) << " of "
                << (last - first) << " traces\n";
    }
  }
  const long long total_bytes = context.processes.sum_on_root(bytes);
  if (context.processes.is_root()) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string form = chakra ? std::string("Chakra protobuf ") + kChakraEtVersion
                                    : std::string("schema ") + kWrittenEtSchema;
    std::printf("wrote %zu execution traces (%s) of %s to %s: %.1f MB in %.2f s\n", ranks.size(),
                form.c_str(), workload.description.c_str(), options.output_dir.c_str(),
                static_cast<double>(total_bytes) / 1e6, seconds);
    std::printf(
        "simulate them with: perfsim simulate --et %s/%s --comm model --topology "
        "T --device D\n",
        options.output_dir.c_str(), chakra ? "*.et" : "*.et.json");
  }
  return 0;
}

}  // namespace

void add_generate_command(CLI::App& app, CommandRegistry& registry) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* sub = app.add_subcommand(
      "generate",
      "Write the per-rank traces of a generated training iteration (--model LLM or --dlrm DLRM) "
      "as PyTorch execution traces (JSON, schema 1.1.0-chakra.0.0.4) or Chakra protobuf traces "
      "(--format chakra). --topology and --device "
      "are needed only by --dlrm (the sharders' memory cap); with --model, --device adds "
      "Transformer Engine's cuBLAS workspaces for its architecture");
  add_llm_simulate_options(*sub, options->llm);
  add_dlrm_simulate_options(*sub, options->dlrm);
  sub->add_option("-o,--output", options->output_dir,
                  "directory for rank<N>.et.json, or perfsim.<N>.et with --format chakra "
                  "(created if missing)")
      ->capture_default_str();
  sub->add_option("--format", options->format,
                  "json: PyTorch execution traces (schema 1.1.0-chakra.0.0.4); chakra: MLCommons "
                  "Chakra protobuf traces (et_def.proto), one perfsim.<rank>.et per rank")
      ->check(CLI::IsMember({"json", "chakra"}))
      ->capture_default_str();
  sub->add_option("--ranks", options->ranks, "only these ranks (default: all)")->delimiter(',');
  registry.add(sub, RankScope::kAllRanks, [options](const CommandContext& context) {
    return run_generate(*options, context);
  });
}

}  // namespace perfsim::cli
