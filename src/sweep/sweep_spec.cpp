#include "sweep/sweep_spec.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/json_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::sweep {
namespace {

using Json = nlohmann::ordered_json;

// Options the sweep itself sets on every task: a sweep file may not.
const std::set<std::string> kOwnedBySweep = {"results", "run-name", "timeline"};
// Keys of base/cases/parameters that configure the task instead of simulate.
constexpr const char* kProcessesKey = "mpi_processes";
// Beyond this a sweep file is almost surely a mistake (and the task table would not fit).
constexpr std::size_t kMaxTasks = 1'000'000;

std::string strip_dashes(const std::string& key) {
  std::size_t start = 0;
  while (start < key.size() && key[start] == '-')
    ++start;
  return key.substr(start);
}

std::string scalar_text(const Json& value, const std::string& source, const std::string& where) {
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_number())
    return value.dump();  // integers stay integers; doubles round-trip
  throw InputError(source, where, "expected a string or a number, got " + value.dump());
}

TaskSetting make_setting(const std::string& raw_key, const Json& value, const std::string& source,
                         const std::string& where) {
  TaskSetting setting;
  setting.key = strip_dashes(raw_key);
  if (setting.key.empty())
    throw InputError(source, where, "empty option name");
  if (kOwnedBySweep.count(setting.key)) {
    throw InputError(source, where,
                     "--" + setting.key + " is set by the sweep for every task; remove it");
  }
  const std::string flag = "--" + setting.key;
  if (value.is_null() || (value.is_boolean() && !value.get<bool>())) {
    setting.display = value.is_null() ? "" : "false";
    return setting;
  }
  if (value.is_boolean()) {
    setting.arguments = {flag};
    setting.display = "true";
    return setting;
  }
  if (value.is_array()) {
    if (value.empty())
      throw InputError(source, where, "an empty list gives the option no value");
    setting.arguments = {flag};
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string text = scalar_text(value[i], source, where + "[" + std::to_string(i) + "]");
      setting.arguments.push_back(text);
      setting.display += (i ? " " : "") + text;
    }
    return setting;
  }
  setting.display = scalar_text(value, source, where);
  setting.arguments = {flag, setting.display};
  return setting;
}

// Replaces the setting with the same key or appends it, keeping first-seen order.
void apply(std::vector<TaskSetting>& settings, TaskSetting setting) {
  auto same = std::find_if(settings.begin(), settings.end(),
                           [&](const TaskSetting& s) { return s.key == setting.key; });
  if (same != settings.end())
    *same = std::move(setting);
  else
    settings.push_back(std::move(setting));
}

const Json& object_field(const Json& root, const char* field, const std::string& source) {
  const Json& value = root.at(field);
  if (!value.is_object())
    throw InputError(source, std::string("/") + field, "expected an object");
  return value;
}

int positive_integer(const std::string& text, const std::string& source, const std::string& where) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value <= 0)
    throw InputError(source, where, "expected a positive integer, got \"" + text + "\"");
  return static_cast<int>(io::checked_integer(value, 1, io::kMaxRanks, source, where));
}

// The "ranks" of a DLRM config file (configs/dlrm/*.json), read relative to the working
// directory as simulate will.
int dlrm_config_ranks(const std::string& config, const std::string& source,
                      const std::string& where) {
  std::ifstream stream(config);
  if (!stream)
    throw InputError(source, where + ": dlrm", "cannot open " + config + " to read its ranks");
  Json root;
  try {
    root = Json::parse(stream);
  } catch (const Json::exception&) {  // parse_error, or out_of_range for a number like 1e400
    throw InputError(source, where + ": dlrm", config + " is not valid JSON");
  }
  if (!root.contains("ranks") || !root.at("ranks").is_number_integer() ||
      root.at("ranks").get<std::int64_t>() <= 0) {
    throw InputError(source, where + ": dlrm", config + " has no positive integer \"ranks\"");
  }
  return io::json_int(root.at("ranks"), 1, static_cast<int>(io::kMaxRanks), source,
                      where + ": dlrm: " + config + ": ranks");
}

// The simulated world size the settings imply, in simulate's order of precedence:
// --dlrm-ranks or the DLRM config's ranks for --dlrm, the product of the parallel degrees for
// --model, --ranks for the synthetic workload; 0 when it cannot be known without reading the
// inputs (traces).
int simulated_ranks_of(const SweepTask& task, const std::string& source) {
  const std::string where = "task " + std::to_string(task.index);
  const std::string dlrm_config = task.value_of("dlrm");
  if (!dlrm_config.empty()) {
    const std::string override_ranks = task.value_of("dlrm-ranks");
    if (!override_ranks.empty())
      return positive_integer(override_ranks, source, where + ": dlrm-ranks");
    return dlrm_config_ranks(dlrm_config, source, where);
  }
  if (!task.value_of("model").empty()) {
    std::int64_t product = 1;  // each degree <= 2^20: the product of three fits int64
    for (const char* degree : {"tp", "pp", "dp"}) {
      const std::string text = task.value_of(degree);
      if (!text.empty())
        product *= positive_integer(text, source, where + ": " + degree);
    }
    return static_cast<int>(
        io::checked_integer(product, 1, io::kMaxRanks, source, where + ": tp x pp x dp"));
  }
  const std::string ranks = task.value_of("ranks");
  if (!ranks.empty())
    return positive_integer(ranks, source, where + ": ranks");
  return 0;
}

std::vector<std::string> string_list(const Json& value, const std::string& source,
                                     const std::string& where) {
  if (!value.is_array() || value.empty())
    throw InputError(source, where, "expected a non-empty list of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string())
      throw InputError(source, where + "/" + std::to_string(i), "expected a string");
    out.push_back(value[i].get<std::string>());
  }
  return out;
}

void parse_launchers_and_slurm(const Json& root, const std::string& source, SweepSpec& spec) {
  if (root.contains("mpirun"))
    spec.mpirun_command = string_list(root.at("mpirun"), source, "/mpirun");
  if (root.contains("srun"))
    spec.srun_command = string_list(root.at("srun"), source, "/srun");
  if (root.contains("max_processes_per_task")) {
    const Json& cap = root.at("max_processes_per_task");
    if (!cap.is_number_integer() || cap.get<std::int64_t>() <= 0)
      throw InputError(source, "/max_processes_per_task", "expected a positive integer");
    spec.max_processes_per_task =
        io::json_int(cap, 1, static_cast<int>(io::kMaxRanks), source, "/max_processes_per_task");
  }
  if (!root.contains("slurm"))
    return;
  const Json& slurm = object_field(root, "slurm", source);
  for (const auto& [key, value] : slurm.items()) {
    const std::string where = "/slurm/" + key;
    if (key == "time" || key == "partition") {
      if (!value.is_string())
        throw InputError(source, where, "expected a string");
      (key == "time" ? spec.slurm.time : spec.slurm.partition) = value.get<std::string>();
    } else if (key == "sbatch_args") {
      spec.slurm.sbatch_args = string_list(value, source, where);
    } else {
      throw InputError(source, where, "unknown field (time, partition, sbatch_args)");
    }
  }
}

}  // namespace

std::vector<std::string> SweepTask::simulate_arguments() const {
  std::vector<std::string> out;
  for (const TaskSetting& setting : settings) {
    if (setting.key == kProcessesKey)
      continue;
    out.insert(out.end(), setting.arguments.begin(), setting.arguments.end());
  }
  return out;
}

std::string SweepTask::value_of(const std::string& key) const {
  for (const TaskSetting& setting : settings) {
    if (setting.key == key)
      return setting.display;
  }
  return "";
}

SweepSpec parse_sweep(std::string_view json_text, const std::string& source) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::out_of_range& error) {
    // nlohmann reports a number beyond double (1e400) as out_of_range, not parse_error.
    throw InputError(source, "",
                     std::string("malformed JSON: number out of range: ") + error.what());
  } catch (const Json::parse_error& error) {
    throw InputError(source, "byte " + std::to_string(error.byte), "malformed JSON");
  }
  if (!root.is_object())
    throw InputError(source, "/", "expected a JSON object");
  static const std::set<std::string> known = {
      "name",   "directory", "base",  "cases",      "parameters", "max_processes_per_task",
      "mpirun", "srun",      "slurm", "description"};
  for (const auto& [key, value] : root.items()) {
    if (!known.count(key)) {
      throw InputError(source, "/" + key,
                       "unknown field (name, directory, base, cases, parameters, "
                       "max_processes_per_task, mpirun, srun, slurm, description)");
    }
  }

  SweepSpec spec;
  spec.file = source;
  for (const char* field : {"name", "directory", "description"}) {
    if (root.contains(field) && !root.at(field).is_string())
      throw InputError(source, std::string("/") + field, "expected a string");
  }
  spec.name = root.contains("name") ? root.at("name").get<std::string>()
                                    : std::filesystem::path(source).stem().string();
  if (spec.name.empty() || spec.name.find('/') != std::string::npos)
    throw InputError(source, "/name", "a sweep name must be non-empty and have no '/'");
  spec.directory = root.contains("directory")
                       ? std::filesystem::path(root.at("directory").get<std::string>())
                       : std::filesystem::path("sweep-" + spec.name);
  parse_launchers_and_slurm(root, source, spec);

  std::vector<TaskSetting> base;
  if (root.contains("base")) {
    for (const auto& [key, value] : object_field(root, "base", source).items())
      apply(base, make_setting(key, value, source, "/base/" + key));
  }

  std::vector<std::vector<TaskSetting>> cases;
  std::vector<std::string> varied;
  auto note_varied = [&](const std::string& key) {
    if (std::find(varied.begin(), varied.end(), key) == varied.end())
      varied.push_back(key);
  };
  if (root.contains("cases")) {
    const Json& list = root.at("cases");
    if (!list.is_array() || list.empty())
      throw InputError(source, "/cases", "expected a non-empty list of objects");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = "/cases/" + std::to_string(i);
      if (!list[i].is_object())
        throw InputError(source, where, "expected an object");
      std::vector<TaskSetting> settings;
      for (const auto& [key, value] : list[i].items()) {
        apply(settings, make_setting(key, value, source, where + "/" + key));
        note_varied(settings.back().key);
      }
      cases.push_back(std::move(settings));
    }
  } else {
    cases.emplace_back();
  }

  std::vector<std::vector<TaskSetting>> parameter_values;  // per parameter, its settings
  if (root.contains("parameters")) {
    for (const auto& [key, values] : object_field(root, "parameters", source).items()) {
      const std::string where = "/parameters/" + key;
      if (!values.is_array() || values.empty())
        throw InputError(source, where, "expected a non-empty list of values");
      std::vector<TaskSetting> settings;
      for (std::size_t i = 0; i < values.size(); ++i)
        settings.push_back(make_setting(key, values[i], source, where + "/" + std::to_string(i)));
      for (const auto& existing : parameter_values) {
        if (existing.front().key == settings.front().key)
          throw InputError(source, where, "the parameter is listed twice");
      }
      note_varied(settings.front().key);
      parameter_values.push_back(std::move(settings));
    }
  }

  std::size_t count = cases.size();
  for (const auto& values : parameter_values) {
    count *= values.size();
    if (count > kMaxTasks)
      throw InputError(source, "/parameters", "more than 1000000 tasks");
  }
  spec.varied_keys = varied;

  // Mixed-radix counting: the last parameter is the fastest digit, the case the slowest.
  for (std::size_t index = 0; index < count; ++index) {
    SweepTask task;
    task.index = static_cast<int>(index);
    std::size_t rest = index;
    std::vector<std::size_t> digits(parameter_values.size());
    for (std::size_t p = parameter_values.size(); p-- > 0;) {
      digits[p] = rest % parameter_values[p].size();
      rest /= parameter_values[p].size();
    }
    task.settings = base;
    for (const TaskSetting& setting : cases[rest])
      apply(task.settings, setting);
    for (std::size_t p = 0; p < parameter_values.size(); ++p)
      apply(task.settings, parameter_values[p][digits[p]]);

    task.simulated_ranks = simulated_ranks_of(task, source);
    const std::string processes = task.value_of(kProcessesKey);
    if (!processes.empty()) {
      task.mpi_processes = positive_integer(processes, source,
                                            "task " + std::to_string(index) + ": " + kProcessesKey);
    } else {
      task.mpi_processes = std::max(1, task.simulated_ranks);
      if (spec.max_processes_per_task > 0)
        task.mpi_processes = std::min(task.mpi_processes, spec.max_processes_per_task);
    }
    spec.tasks.push_back(std::move(task));
  }
  return spec;
}

SweepSpec load_sweep(const std::filesystem::path& file,
                     const std::filesystem::path& directory_override) {
  std::ifstream stream(file);
  if (!stream)
    throw InputError(file.string(), "", "cannot open the sweep file");
  std::ostringstream text;
  text << stream.rdbuf();
  SweepSpec spec = parse_sweep(text.str(), file.string());
  if (!directory_override.empty())
    spec.directory = directory_override;
  return spec;
}

}  // namespace perfsim::sweep
