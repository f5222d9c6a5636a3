#include "sweep/sweep_plan.hpp"

#include <fstream>

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

std::filesystem::path write_plan(const SweepSpec& spec) {
  std::filesystem::create_directories(spec.directory);
  const std::filesystem::path table_path = spec.directory / "tasks.csv";
  std::ofstream table(table_path);
  table << table_to_csv(task_table(spec));
  if (!table)
    throw RuntimeFailure(table_path.string() + ": cannot write the task table");
  const std::filesystem::path copy = spec.directory / "sweep.json";
  if (!std::filesystem::exists(copy) || !std::filesystem::equivalent(copy, spec.file))
    std::filesystem::copy_file(spec.file, copy, std::filesystem::copy_options::overwrite_existing);
  return copy;
}

}  // namespace perfsim::sweep
