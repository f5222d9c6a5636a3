#include "benchmark_data/benchmark_schema.hpp"

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

}  // namespace perfsim::benchmark_data
