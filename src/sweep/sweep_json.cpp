#include "sweep/sweep_json.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

namespace perfsim::sweep {
namespace {

nlohmann::json cell(const h5::Column& column, std::size_t row) {
  if (const auto* values = std::get_if<std::vector<double>>(&column))
    return std::isfinite((*values)[row]) ? nlohmann::json((*values)[row]) : nlohmann::json();
  if (const auto* values = std::get_if<std::vector<std::int64_t>>(&column))
    return (*values)[row];
  return std::get<std::vector<std::string>>(column)[row];
}

const char* type_name(const h5::Column& column) {
  if (std::holds_alternative<std::vector<double>>(column))
    return "number";
  if (std::holds_alternative<std::vector<std::int64_t>>(column))
    return "integer";
  return "string";
}

}  // namespace

std::string merged_to_json(const SweepSpec& spec, const MergedSweep& merged) {
  const h5::ColumnTable& table = merged.table;
  nlohmann::json out;
  out["schema"] = kSweepJsonSchema;
  out["name"] = spec.name;
  out["directory"] = spec.directory.string();
  out["merged_h5"] = (spec.directory / "merged.h5").string();
  out["merged_csv"] = (spec.directory / "merged.csv").string();
  out["tasks"] = spec.tasks.size();
  nlohmann::json columns = nlohmann::json::array();
  for (const std::string& name : table.column_order) {
    const auto unit = table.units.find(name);
    columns.push_back({{"name", name},
                       {"type", type_name(table.columns.at(name))},
                       {"unit", unit == table.units.end() ? "" : unit->second}});
  }
  out["columns"] = columns;
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t row = 0; row < table.rows(); ++row) {
    nlohmann::json object = nlohmann::json::object();
    for (const std::string& name : table.column_order)
      object[name] = cell(table.columns.at(name), row);
    rows.push_back(std::move(object));
  }
  out["rows"] = rows;
  out["missing_tasks"] = merged.missing_indices;
  nlohmann::json failed = nlohmann::json::array();
  for (int index : merged.failed_indices) {
    nlohmann::json task = {{"task", index}};
    const auto failure = merged.failures.find(index);
    if (failure != merged.failures.end()) {
      task["exit_status"] = failure->second.exit_status;
      task["stderr_tail"] = failure->second.stderr_tail;
    }
    failed.push_back(std::move(task));
  }
  out["failed_tasks"] = failed;
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace perfsim::sweep
