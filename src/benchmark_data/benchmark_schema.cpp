#include "benchmark_data/benchmark_schema.hpp"

#include "perfsim/error.hpp"

namespace perfsim::benchmark_data {

std::map<std::string, std::string> table_attributes(const std::string& kind,
                                                    const std::string& device,
                                                    const std::string& source,
                                                    const BenchmarkAttributes& extra) {
  std::map<std::string, std::string> attributes = extra;
  attributes[kKindAttribute] = kind;
  attributes["device"] = device;
  attributes["source"] = source;
  if (!attributes.contains("software"))
    attributes["software"] = "";
  return attributes;
}

h5::ColumnTable read_benchmark_table(const std::string& file_path, const std::string& group,
                                     const std::string& what,
                                     const std::vector<std::string>& required_columns) {
  if (!h5::group_exists(file_path, group))
    throw InputError(file_path, group, "no " + what + " benchmark table");
  h5::ColumnTable table = h5::read_table(file_path, group);
  for (const std::string& column : required_columns) {
    if (!table.columns.contains(column))
      throw InputError(file_path, group + "/" + column, "missing column");
  }
  for (const char* key : {"device", "source"}) {
    auto it = table.attributes.find(key);
    if (it == table.attributes.end() || it->second.empty())
      throw InputError(file_path, group, std::string("missing attribute ") + key);
  }
  return table;
}

}  // namespace perfsim::benchmark_data
