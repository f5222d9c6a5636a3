#pragma once
// The perfsim command line: one CLI11 app, one file per subcommand (add_*_command), wired
// together in command_line.cpp.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "mpi_sim/mpi/process_group.hpp"

namespace perfsim::cli {

// Who runs a command: rank 0 alone (file tools), or every MPI process (the simulator).
enum class RankScope { kRankZeroOnly, kAllRanks };

struct CommandContext {
  // The run's MPI processes (this process's rank and their count), for the commands that work
  // together (simulate, generate); a process alone by default.
  mpi::ProcessGroup processes;
};

using CommandAction = std::function<int(const CommandContext&)>;

class CommandRegistry {
 public:
  void add(CLI::App* subcommand, RankScope scope, CommandAction action) {
    entries_.push_back({subcommand, scope, std::move(action)});
  }
  struct Entry {
    CLI::App* subcommand;
    RankScope scope;
    CommandAction action;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  // What `perfsim` with no subcommand runs (on every rank).
  void set_default(CommandAction action) { default_action_ = std::move(action); }
  const CommandAction& default_action() const { return default_action_; }

 private:
  std::vector<Entry> entries_;
  CommandAction default_action_;
};

// Subcommands. Each adds itself to `app` and registers its action.
void add_simulate_command(CLI::App& app, CommandRegistry& registry);
void add_trace_command(CLI::App& app, CommandRegistry& registry);
void add_overheads_command(CLI::App& app, CommandRegistry& registry);
void add_import_command(CLI::App& app, CommandRegistry& registry);
void add_fit_command(CLI::App& app, CommandRegistry& registry);
void add_validate_command(CLI::App& app, CommandRegistry& registry);
void add_validate_runs_command(CLI::App& app, CommandRegistry& registry);
void add_calibrate_command(CLI::App& app, CommandRegistry& registry);
void add_bench_parse_command(CLI::App& app, CommandRegistry& registry);
void add_train_command(CLI::App& app, CommandRegistry& registry);
void add_models_command(CLI::App& app, CommandRegistry& registry);
void add_memory_command(CLI::App& app, CommandRegistry& registry);
void add_generate_command(CLI::App& app, CommandRegistry& registry);
void add_sweep_command(CLI::App& app, CommandRegistry& registry);
void add_shard_command(CLI::App& app, CommandRegistry& registry);
void add_plan_command(CLI::App& app, CommandRegistry& registry);

int run_perfsim(int argc, char** argv);

}  // namespace perfsim::cli
