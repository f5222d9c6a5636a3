#include "mpi_sim/cli/command_line.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>
#include <thread>

#include "mpi_sim/mpi/distributed_run.hpp"
#include "mpi_sim/mpi/mpi_session.hpp"
#include "perfsim/error.hpp"

namespace perfsim::cli {
namespace {

// The exit codes (README "Exit codes"): 0 ok, 1 internal error (a bug: please report it),
// 2 bad input or command line, 3 I/O or environment (an output that cannot be written, a lock
// held too long, MPI or the machine failing).
constexpr int kExitInternal = 1;
constexpr int kExitInputError = 2;
constexpr int kExitEnvironment = 3;

[[noreturn]] void fail_all(const CommandContext& context, int exit_code) {
  mpi::end_run_after_error(context.processes, exit_code);
}

// One write per message, so lines of several processes never interleave. An error that every
// process meets (the same bad file) is printed by process 0, whose abort ends the others
// before they print; a process that fails alone still prints after that grace period.
void report_error(const CommandContext& context, const char* what) {
  if (!context.processes.is_root() && context.processes.size() > 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string line = std::string("perfsim: error: ") + what + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

int run_action(const CommandRegistry::Entry& entry, const CommandContext& context) {
  try {
    return entry.action(context);
  } catch (const mpi::AllRanksError& error) {
    // Raised identically on every process: one message, and a clean collective exit.
    if (context.processes.is_root())
      std::cerr << "perfsim: error: " << error.what() << "\n";
    return kExitInputError;
  } catch (const InputError& error) {
    report_error(context, error.what());
    fail_all(context, kExitInputError);
  } catch (const RuntimeFailure& error) {
    report_error(context, error.what());
    fail_all(context, kExitEnvironment);
  } catch (const std::filesystem::filesystem_error& error) {
    report_error(context, error.what());
    fail_all(context, kExitEnvironment);
  } catch (const std::bad_alloc&) {
    report_error(context, "out of memory");
    fail_all(context, kExitEnvironment);
  } catch (const std::exception& error) {
    report_error(context,
                 (std::string("internal error (please report it): ") + error.what()).c_str());
    fail_all(context, kExitInternal);
  } catch (...) {
    report_error(context, "internal error (please report it): unknown exception");
    fail_all(context, kExitInternal);
  }
}

// CLI11's own errors carry codes 100-120; perfsim's contract is exit 2 for any command-line
// mistake, printed once (process 0) in the one error format. Help and version exit 0.
int exit_for_parse_error(const CLI::App& app, const CLI::ParseError& error,
                         const CommandContext& context) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    if (context.processes.is_root())
      app.exit(error);
    return 0;
  }
  if (context.processes.is_root()) {
    const std::string line = std::string("perfsim: error: command line: ") + error.what() +
                             " (`perfsim --help`, `perfsim COMMAND --help`)\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  return kExitInputError;
}

// A report written to a full disk must not end in exit 0: the run's output is its answer.
int check_standard_output(int exit_code) {
  errno = 0;
  std::cout.flush();
  const bool written = std::cout.good() && std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (written)
    return exit_code;
  const int error = errno;
  const std::string line = std::string("perfsim: error: standard output: cannot write: ") +
                           (error != 0 ? std::strerror(error) : "write error") + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  return exit_code == 0 ? kExitEnvironment : exit_code;
}

}  // namespace

int run_perfsim(int argc, char** argv) {
  const mpi::MpiSession session(argc, argv);
  CommandContext context;
  context.processes = session.world();

  CLI::App app{
      "perfsim: predicts per-iteration training time and per-GPU memory of ML workloads on "
      "multi-GPU clusters. Run one MPI process per simulated rank (or several ranks per "
      "process), e.g. `mpirun -n 8 perfsim simulate ...`.",
      "perfsim"};
  app.require_subcommand(0, 1);
  // Every option's --help shows its default value (subcommands inherit this when created).
  app.option_defaults()->always_capture_default();
  CommandRegistry registry;
  add_simulate_command(app, registry);
  add_trace_command(app, registry);
  add_overheads_command(app, registry);
  add_import_command(app, registry);
  add_fit_command(app, registry);
  add_validate_command(app, registry);
  add_validate_runs_command(app, registry);
  add_calibrate_command(app, registry);
  add_bench_parse_command(app, registry);
  add_train_command(app, registry);
  add_models_command(app, registry);
  add_memory_command(app, registry);
  add_generate_command(app, registry);
  add_sweep_command(app, registry);
  add_shard_command(app, registry);
  add_plan_command(app, registry);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return check_standard_output(exit_for_parse_error(app, error, context));
  }

  int exit_code = 0;
  bool ran = false;
  for (const auto& entry : registry.entries()) {
    if (!entry.subcommand->parsed())
      continue;
    ran = true;
    if (entry.scope == RankScope::kAllRanks || context.processes.is_root()) {
      exit_code = run_action(entry, context);
    }
  }
  if (!ran) {
    if (registry.default_action()) {
      exit_code = run_action({&app, RankScope::kAllRanks, registry.default_action()}, context);
    } else if (context.processes.is_root()) {
      std::cout << app.help();
    }
  }
  exit_code = check_standard_output(exit_code);
  context.processes.barrier();
  return exit_code;
}

}  // namespace perfsim::cli
