#include "sweep/sweep_plan.hpp"

#include <fstream>
#include <sstream>

#include "io/atomic_file.hpp"
#include "perfsim/error.hpp"
#include "sweep/child_process.hpp"
#include "sweep/table_text.hpp"

namespace perfsim::sweep {

h5::ColumnTable task_table(const SweepSpec& spec) {
  std::vector<std::int64_t> indices, processes, simulated;
  std::vector<std::vector<std::string>> varied(spec.varied_keys.size());
  std::vector<std::string> arguments;
  for (const SweepTask& task : spec.tasks) {
    indices.push_back(task.index);
    processes.push_back(task.mpi_processes);
    simulated.push_back(task.simulated_ranks);
    for (std::size_t k = 0; k < spec.varied_keys.size(); ++k)
      varied[k].push_back(task.value_of(spec.varied_keys[k]));
    arguments.push_back(shell_join(task.simulate_arguments()));
  }
  h5::ColumnTable table;
  table.add("task", indices);
  table.add("mpi_processes", processes);
  table.add("simulated_ranks", simulated);
  for (std::size_t k = 0; k < spec.varied_keys.size(); ++k)
    table.add(spec.varied_keys[k], varied[k]);
  table.add("simulate_arguments", arguments);
  return table;
}

namespace {

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in)
    throw InputError(path.string(), "", "cannot read the sweep file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool has_results(const std::filesystem::path& directory) {
  const std::filesystem::path results = directory / "results";
  return std::filesystem::is_directory(results) && !std::filesystem::is_empty(results);
}

}  // namespace

std::filesystem::path write_plan(const SweepSpec& spec) {
  const std::filesystem::path copy = spec.directory / "sweep.json";
  const std::string text = file_text(spec.file);
  const bool same_file = std::filesystem::exists(copy) && std::filesystem::exists(spec.file) &&
                         std::filesystem::equivalent(copy, spec.file);
  if (same_file)
    return copy;
  if (std::filesystem::exists(copy)) {
    if (file_text(copy) == text)
      return copy;
    if (has_results(spec.directory)) {
      throw InputError(spec.file.string(), "",
                       "differs from " + copy.string() + ", the sweep whose results are in " +
                           spec.directory.string() +
                           " (task numbers would no longer match); give another --dir, or "
                           "remove that directory");
    }
  }
  std::filesystem::create_directories(spec.directory);
  const std::filesystem::path table_path = spec.directory / "tasks.csv";
  io::write_file_atomically(table_path, table_to_csv(task_table(spec)));
  io::write_file_atomically(copy, text);
  return copy;
}

}  // namespace perfsim::sweep
