#include "sweep/sweep_merge.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>

#include "io/atomic_file.hpp"
#include "perfsim/error.hpp"
#include "sweep/table_text.hpp"
#include "sweep/task_figures.hpp"

namespace perfsim::sweep {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool parse_number(const std::string& text, double& value) {
  if (text.empty())
    return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

// A varied key becomes a float64 column when every task that sets it gives a number.
h5::Column parameter_column(const SweepSpec& spec, const std::string& key) {
  std::vector<double> numbers;
  std::vector<std::string> texts;
  bool numeric = true;
  for (const SweepTask& task : spec.tasks) {
    const std::string text = task.value_of(key);
    texts.push_back(text);
    double value = kNaN;
    if (!text.empty() && !parse_number(text, value))
      numeric = false;
    numbers.push_back(value);
  }
  if (numeric)
    return numbers;
  return texts;
}

// The line that says what went wrong: perfsim's own error line when the tail has one (MPI's
// abort banner follows it), else the last non-empty line.
std::string error_line(const std::string& stderr_tail) {
  std::string last;
  std::size_t start = 0;
  while (start < stderr_tail.size()) {
    std::size_t end = stderr_tail.find('\n', start);
    if (end == std::string::npos)
      end = stderr_tail.size();
    const std::string line = stderr_tail.substr(start, end - start);
    if (line.rfind("perfsim: error: ", 0) == 0)
      return line;
    if (line.find_first_not_of(" \r") != std::string::npos)
      last = line;
    start = end + 1;
  }
  return last;
}

}  // namespace

MergedSweep merge_sweep(const SweepSpec& spec) {
  MergedSweep merged;
  const std::size_t count = spec.tasks.size();
  std::vector<std::int64_t> indices, processes, simulated, exit_statuses(count, 0);
  std::vector<std::string> states, errors(count);
  std::vector<std::string> figure_order;
  std::map<std::string, std::vector<double>> figures;

  for (std::size_t row = 0; row < count; ++row) {
    const SweepTask& task = spec.tasks[row];
    indices.push_back(task.index);
    processes.push_back(task.mpi_processes);
    simulated.push_back(task.simulated_ranks);
    TaskState state = task_state(spec.directory, task.index);
    const TaskPaths paths = task_paths(spec.directory, task.index);
    if (state == TaskState::kDone) {
      try {
        for (const auto& [name, value] : read_task_figures(paths.result, kTaskRunName)) {
          auto [slot, inserted] = figures.try_emplace(name, count, kNaN);
          if (inserted)
            figure_order.push_back(name);
          slot->second[row] = value;
        }
      } catch (const std::exception& error) {
        // A results file that cannot be read is a failed task, not a failed merge.
        state = TaskState::kFailed;
        merged.failures[task.index] = {0, "", std::string("unreadable results: ") + error.what()};
        errors[row] = merged.failures[task.index].stderr_tail;
      }
    } else if (state == TaskState::kFailed) {
      TaskFailure failure = read_failure(paths);
      exit_statuses[row] = failure.exit_status;
      errors[row] = error_line(failure.stderr_tail);
      merged.failures[task.index] = std::move(failure);
    } else if (state == TaskState::kLost) {
      errors[row] = "started but its process is gone (no result, no failure record)";
    }
    if (state == TaskState::kFailed || state == TaskState::kLost)
      merged.failed_indices.push_back(task.index);
    else if (state != TaskState::kDone)
      merged.missing_indices.push_back(task.index);
    states.push_back(to_string(state));
  }

  h5::ColumnTable& table = merged.table;
  table.add("task", indices);
  table.add("state", states);
  table.add("mpi_processes", processes);
  table.add("simulated_ranks", simulated);
  for (const std::string& key : spec.varied_keys)
    table.add(key, parameter_column(spec, key));
  for (const std::string& name : figure_order) {
    const bool is_time = name.size() > 3 && name.compare(name.size() - 3, 3, "_us") == 0;
    table.add(name, figures.at(name), is_time ? "us" : "");
  }
  table.add("exit_status", exit_statuses);
  table.add("error", errors);
  table.attributes["sweep"] = spec.name;
  table.attributes["sweep_file"] = spec.file.string();
  table.attributes["tasks"] = std::to_string(count);
  table.attributes["figures"] =
      "iteration_us: max over ranks; mean_* and stream*_busy_us: means over ranks; "
      "comm_time_us, exposed_comm_us, exposed_<kind>_us: max over ranks of the per-rank sum";
  return merged;
}

void write_merged(const SweepSpec& spec, const MergedSweep& merged) {
  std::filesystem::create_directories(spec.directory);
  const std::filesystem::path h5_path = spec.directory / "merged.h5";
  h5::write_table(h5_path.string(), kMergedGroup, merged.table, /*truncate_file=*/true);
  const std::filesystem::path csv_path = spec.directory / "merged.csv";
  io::write_file_atomically(csv_path, table_to_csv(merged.table));
}

}  // namespace perfsim::sweep
