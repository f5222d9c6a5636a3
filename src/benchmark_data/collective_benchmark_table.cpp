#include "benchmark_data/collective_benchmark_table.hpp"

#include "hdf5/column_table.hpp"
#include "io/checked_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::benchmark_data {
namespace {

constexpr char kHeaderPrefix[] = "header_";

std::string table_path(const std::string& name) {
  return std::string(kCollectiveBenchmarkGroup) + "/" + name;
}

std::string attribute_or(const h5::ColumnTable& table, const std::string& key,
                         const std::string& fallback) {
  auto it = table.attributes.find(key);
  return it == table.attributes.end() ? fallback : it->second;
}

}  // namespace

void write_collective_sweep(const std::string& file_path, const collectives::CollectiveSweep& sweep,
                            bool truncate_file) {
  write_collective_sweep(file_path, sweep, truncate_file, {});
}

void write_collective_sweep(const std::string& file_path, const collectives::CollectiveSweep& sweep,
                            bool truncate_file, std::span<const ExtraSampleColumn> extra_columns) {
  h5::ColumnTable table;
  std::vector<std::string> collective;
  std::vector<std::int64_t> bytes, n_ranks, n_nodes, in_place;
  std::vector<double> time_us, algbw, busbw;
  for (const auto& sample : sweep.samples) {
    collective.emplace_back(collective_name(sweep.kind));
    bytes.push_back(sample.bytes);
    time_us.push_back(sample.time_us);
    algbw.push_back(sample.algbw_GBps);
    busbw.push_back(sample.busbw_GBps);
    n_ranks.push_back(sweep.n_ranks);
    n_nodes.push_back(sweep.n_nodes);
    in_place.push_back(sample.in_place ? 1 : 0);
  }
  table.add("collective", collective);
  table.add("bytes", bytes, "bytes");
  table.add("time_us", time_us, "us");
  table.add("algbw_GBps", algbw, "GBps");
  table.add("busbw_GBps", busbw, "GBps");
  table.add("n_ranks", n_ranks);
  table.add("n_nodes", n_nodes);
  table.add("in_place", in_place);
  const auto header = [&](const std::string& key) {
    auto it = sweep.metadata.find(key);
    return it == sweep.metadata.end() ? std::string() : it->second;
  };
  table.attributes["kind"] = "collective";
  table.attributes["device"] = !header("hardware").empty() ? header("hardware") : header("device");
  table.attributes["software"] =
      "nccl " + header("nccl") + (header("software").empty() ? "" : "; " + header("software"));
  table.attributes["source_file"] = sweep.source_file;
  table.attributes["source"] = sweep.source_file;
  table.attributes["time_derived_from_busbw"] = sweep.time_derived_from_busbw ? "true" : "false";
  table.attributes["units"] =
      "bytes: bytes (nccl-tests size); time_us: microseconds; algbw_GBps, busbw_GBps: 1e9 bytes/s";
  for (const auto& [key, value] : sweep.metadata)
    table.attributes[kHeaderPrefix + key] = value;
  for (const ExtraSampleColumn& column : extra_columns) {
    if (table.columns.contains(column.name))
      throw RuntimeFailure("write_collective_sweep: extra column '" + column.name +
                           "' is a column of the schema");
    if (column.values.size() != sweep.samples.size())
      throw RuntimeFailure("write_collective_sweep: extra column '" + column.name + "' has " +
                           std::to_string(column.values.size()) + " values for " +
                           std::to_string(sweep.samples.size()) + " samples");
    table.add(column.name, column.values, column.unit);
  }
  h5::write_table(file_path, table_path(sweep.name), table, truncate_file);
}

collectives::CollectiveSweep read_collective_sweep(const std::string& file_path,
                                                   const std::string& name) {
  const std::string path = table_path(name);
  const h5::ColumnTable table = h5::read_table(file_path, path);
  collectives::CollectiveSweep sweep;
  sweep.name = name;
  sweep.source_file = attribute_or(table, "source_file", file_path + ":" + path);
  sweep.time_derived_from_busbw = attribute_or(table, "time_derived_from_busbw", "") == "true";
  for (const auto& [key, value] : table.attributes) {
    if (key.rfind(kHeaderPrefix, 0) == 0)
      sweep.metadata[key.substr(sizeof(kHeaderPrefix) - 1)] = value;
  }
  const auto& collective = table.strings("collective");
  const auto& bytes = table.integers("bytes");
  const auto& time_us = table.doubles("time_us");
  const auto& algbw = table.doubles("algbw_GBps");
  const auto& busbw = table.doubles("busbw_GBps");
  const auto& n_ranks = table.integers("n_ranks");
  const auto& n_nodes = table.integers("n_nodes");
  const auto& in_place = table.integers("in_place");
  if (table.rows() == 0)
    throw InputError(file_path, path, "empty benchmark table");
  const auto kind = parse_collective(collective.front());
  if (!kind)
    throw InputError(file_path, path + "/collective",
                     "unknown collective '" + collective.front() + "'");
  sweep.kind = *kind;
  sweep.n_ranks = static_cast<int>(
      io::checked_integer(n_ranks.front(), 1, io::kMaxRanks, file_path, path + "/n_ranks"));
  sweep.n_nodes = static_cast<int>(
      io::checked_integer(n_nodes.front(), 1, io::kMaxRanks, file_path, path + "/n_nodes"));
  for (std::size_t row = 0; row < table.rows(); ++row) {
    if (collective[row] != collective.front() || n_ranks[row] != n_ranks.front() ||
        n_nodes[row] != n_nodes.front())
      throw InputError(file_path, path + " row " + std::to_string(row),
                       "one table must hold one collective on one group (collective, n_ranks, "
                       "n_nodes differ from row 0)");
    const std::string where = path + " row " + std::to_string(row);
    io::checked_integer(bytes[row], 0, io::kMaxBytes, file_path, where + " bytes");
    io::checked_real(time_us[row], 0, io::kMaxDurationUs, file_path, where + " time_us");
    io::checked_real(algbw[row], 0, 1e9, file_path, where + " algbw_GBps");
    io::checked_real(busbw[row], 0, 1e9, file_path, where + " busbw_GBps");
    sweep.samples.push_back({bytes[row], time_us[row], algbw[row], busbw[row], in_place[row] != 0});
  }
  return sweep;
}

std::vector<std::string> list_collective_sweeps(const std::string& file_path) {
  if (!h5::group_exists(file_path, kCollectiveBenchmarkGroup))
    return {};
  return h5::list_groups(file_path, kCollectiveBenchmarkGroup);
}

}  // namespace perfsim::benchmark_data
