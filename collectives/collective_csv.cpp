#include "collectives/collective_csv.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "collectives/bus_factor.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

constexpr std::string_view kHeader = "size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)";

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, ','))
    fields.push_back(field);
  return fields;
}

double number(const std::string& field, const std::string& source, int line, const char* what) {
  try {
    std::size_t used = 0;
    const double value = std::stod(field, &used);
    if (used == field.size() && value > 0.0)
      return value;
  } catch (const std::exception&) {
  }
  throw InputError(source, "line " + std::to_string(line),
                   std::string(what) + " '" + field + "' is not a positive number");
}

}  // namespace

CollectiveSweep parse_collective_csv(std::string_view text, const std::string& source) {
  CollectiveSweep sweep;
  sweep.source_file = source;
  sweep.name = std::filesystem::path(source).stem().string();
  // "<collective>-<N>gpu": parsed by hand (std::regex trips GCC 12's maybe-uninitialized
  // warning under the sanitizer build).
  const std::string& name = sweep.name;
  const std::size_t dash = name.rfind('-');
  const bool shaped = dash != std::string::npos && dash > 0 && name.ends_with("gpu") &&
                      name.size() > dash + 4 &&
                      name.find_first_not_of("0123456789", dash + 1) == name.size() - 3 &&
                      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == dash;
  if (!shaped)
    throw InputError(source, "file name", "expected '<collective>-<N>gpu.csv'");
  const std::string collective = name.substr(0, dash);
  const std::string count = name.substr(dash + 1, name.size() - 3 - (dash + 1));
  const auto kind = parse_collective(collective);
  if (!kind)
    throw InputError(source, "file name", "unknown collective '" + collective + "'");
  sweep.kind = *kind;
  if (count.size() > 6)
    throw InputError(source, "file name", "GPU count '" + count + "' out of range");
  sweep.n_ranks = std::stoi(count);
  if (sweep.n_ranks < 1)
    throw InputError(source, "file name", "GPU count must be at least 1");
  sweep.n_nodes = 1;
  sweep.metadata["format"] = "nccl-tests CSV (vTrain)";

  std::stringstream stream{std::string(text)};
  std::string line;
  int line_number = 0;
  std::vector<CollectiveSample> in_place;
  const double factor = bus_factor(sweep.kind, sweep.n_ranks);
  while (std::getline(stream, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line_number == 1) {
      if (line != kHeader)
        throw InputError(source, "line 1", "expected the header '" + std::string(kHeader) + "'");
      continue;
    }
    if (line.empty())
      continue;
    const auto fields = split_fields(line);
    if (fields.size() != 7)
      throw InputError(source, "line " + std::to_string(line_number),
                       "expected 7 fields, got " + std::to_string(fields.size()));
    const auto bytes = static_cast<Bytes>(number(fields[0], source, line_number, "size"));
    if (!sweep.samples.empty() && bytes <= sweep.samples.back().bytes)
      throw InputError(source, "line " + std::to_string(line_number), "sizes do not grow");
    for (int placement = 0; placement < 2; ++placement) {
      CollectiveSample sample;
      sample.bytes = bytes;
      sample.time_us = number(fields[3 + 2 * placement], source, line_number, "time") / 1e3;
      sample.algbw_GBps = static_cast<double>(bytes) / (sample.time_us * 1e3);
      sample.busbw_GBps = sample.algbw_GBps * factor;
      sample.in_place = placement == 1;
      (placement == 0 ? sweep.samples : in_place).push_back(sample);
    }
  }
  if (sweep.samples.empty())
    throw InputError(source, "line " + std::to_string(line_number), "no data rows");
  sweep.samples.insert(sweep.samples.end(), in_place.begin(), in_place.end());
  return sweep;
}

CollectiveSweep read_collective_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw InputError(path, "", "cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_collective_csv(buffer.str(), path);
}

}  // namespace perfsim::collectives
