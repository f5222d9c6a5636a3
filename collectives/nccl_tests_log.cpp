#include "collectives/nccl_tests_log.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "collectives/bus_factor.hpp"
#include "io/checked_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::istringstream in{std::string(text)};
  for (std::string word; in >> word;)
    words.push_back(word);
  return words;
}

// Bus bandwidths beyond 1e9 GB/s are six orders above any link: a corrupt log.
constexpr double kMaxBandwidthGBps = 1e9;

std::optional<double> to_double(const std::string& word) {
  double value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size())
    return std::nullopt;
  return value;
}

std::optional<std::int64_t> to_integer(const std::string& word) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size())
    return std::nullopt;
  return value;
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos)
    return "";
  const auto last = text.find_last_not_of(" \t\r");
  return std::string(text.substr(first, last - first + 1));
}

std::string line_at(int number) {
  return "line " + std::to_string(number);
}

// Where the measurements of one placement sit in a row of the nccl-tests layout.
struct PlacementColumns {
  bool in_place = false;
  std::size_t time = 0;
  std::size_t algbw = 0;
  std::size_t busbw = 0;
  std::optional<std::size_t> wrong;  // "#wrong" count, or the old float "error"
  bool wrong_is_count = true;
};

struct Layout {
  bool busbw_only = false;
  std::size_t field_count = 0;
  std::size_t size = 0;
  std::size_t busbw_only_value = 0;
  std::optional<std::size_t> type;  // element type column ("float")
  std::vector<PlacementColumns> placements;
  int header_line = 0;
};

std::optional<std::size_t> find_from(const std::vector<std::string>& words, const std::string& word,
                                     std::size_t from) {
  for (std::size_t i = from; i < words.size(); ++i) {
    if (words[i] == word)
      return i;
  }
  return std::nullopt;
}

Layout layout_from_header(const std::vector<std::string>& words, int line,
                          const std::string& source) {
  Layout layout;
  layout.header_line = line;
  layout.field_count = words.size();
  if (words.front() == "size_label") {
    const auto bytes = find_from(words, "size_bytes_inferred", 0);
    const auto busbw = find_from(words, "busbw_GBps", 0);
    if (!bytes || !busbw)
      throw InputError(source, line_at(line),
                       "bus-bandwidth table header needs size_bytes_inferred and busbw_GBps");
    layout.busbw_only = true;
    layout.size = *bytes;
    layout.busbw_only_value = *busbw;
    return layout;
  }
  layout.size = 0;
  layout.type = find_from(words, "type", 0);
  std::size_t from = 0;
  for (bool in_place : {false, true}) {
    const auto time = find_from(words, "time", from);
    if (!time)
      break;
    PlacementColumns columns;
    columns.in_place = in_place;
    columns.time = *time;
    const auto algbw = find_from(words, "algbw", *time);
    const auto busbw = find_from(words, "busbw", *time);
    if (!algbw || !busbw)
      throw InputError(source, line_at(line), "column header has 'time' without algbw/busbw");
    columns.algbw = *algbw;
    columns.busbw = *busbw;
    if (*busbw + 1 < words.size() &&
        (words[*busbw + 1] == "#wrong" || words[*busbw + 1] == "error")) {
      columns.wrong = *busbw + 1;
      columns.wrong_is_count = words[*busbw + 1] == "#wrong";
    }
    from = *busbw + 1;
    layout.placements.push_back(columns);
  }
  if (layout.placements.empty())
    throw InputError(source, line_at(line), "column header has no 'time' column");
  return layout;
}

struct HeaderFacts {
  std::map<std::string, std::string> keys;  // "# key: value" comments
  int rank_lines = 0;
  std::set<std::string> hosts;
  std::string device;
  bool footer_seen = false;
};

void read_comment(std::string_view body, HeaderFacts& facts, int line,
                  std::vector<std::string>& warnings, const std::string& source) {
  const std::vector<std::string> words = split_words(body);
  if (words.empty())
    return;
  // "#  Rank  0 Group  0 Pid 746 on host device  0 [0x4f] Tesla V100-SXM2-16GB"
  if (words[0] == "Rank" && words.size() >= 8) {
    ++facts.rank_lines;
    const auto on = find_from(words, "on", 0);
    if (on && *on + 1 < words.size())
      facts.hosts.insert(words[*on + 1]);
    const auto device = find_from(words, "device", 0);
    if (device && *device + 3 < words.size()) {
      std::string name;
      for (std::size_t i = *device + 3; i < words.size(); ++i)
        name += (name.empty() ? "" : " ") + words[i];
      facts.device = name;
    }
    return;
  }
  const std::string text = trim(body);
  if (text.rfind("Avg bus bandwidth", 0) == 0) {
    facts.footer_seen = true;
    return;
  }
  if (text.rfind("Out of bounds values", 0) == 0) {
    const auto colon = text.find(':');
    const auto words = colon == std::string::npos ? std::vector<std::string>{}
                                                  : split_words(text.substr(colon + 1));
    const auto value = words.empty() ? std::nullopt : to_integer(words.front());
    if (value && *value > 0)
      warnings.push_back(source + ": " + line_at(line) + ": " + std::to_string(*value) +
                         " out-of-bounds values reported by nccl-tests");
    return;
  }
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0)
    return;
  const std::string key = text.substr(0, colon);
  if (!std::all_of(key.begin(), key.end(),
                   [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }))
    return;
  facts.keys.emplace(key, trim(text.substr(colon + 1)));
}

std::optional<int> leading_integer(const std::string& text) {
  const auto words = split_words(text);
  if (words.empty())
    return std::nullopt;
  const auto value = to_integer(words.front());
  if (!value)
    return std::nullopt;
  return static_cast<int>(*value);
}

std::optional<CollectiveKind> collective_from(const HeaderFacts& facts, const std::string& source) {
  if (auto it = facts.keys.find("collective"); it != facts.keys.end()) {
    std::string first = split_words(it->second).empty() ? "" : split_words(it->second).front();
    first.erase(std::remove(first.begin(), first.end(), ','), first.end());
    if (auto kind = parse_collective(first))
      return kind;
  }
  for (const std::string& text : {facts.keys.count("command") ? facts.keys.at("command") : "",
                                  std::filesystem::path(source).filename().string()}) {
    for (const char* name : {"all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter",
                             "alltoall", "broadcast", "sendrecv"}) {
      if (text.find(name) != std::string::npos)
        return std::string_view(name) == "sendrecv" ? std::optional(CollectiveKind::kSend)
                                                    : parse_collective(name);
    }
  }
  return std::nullopt;
}

// n from busbw/algbw = bus_factor(kind, n), for the kinds whose factor depends on n.
std::optional<int> ranks_from_ratio(CollectiveKind kind, double ratio) {
  double n = 0;
  if (kind == CollectiveKind::kAllReduce && ratio < 1.999)
    n = 2.0 / (2.0 - ratio);
  else if ((kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter ||
            kind == CollectiveKind::kAllToAll) &&
           ratio < 0.999)
    n = 1.0 / (1.0 - ratio);
  else
    return std::nullopt;
  return static_cast<int>(std::lround(n));
}

struct RowValues {
  std::int64_t bytes = 0;
  int line = 0;
  std::vector<std::string> words;
};

}  // namespace

NcclTestsLog parse_nccl_tests_log(std::string_view text, const std::string& source) {
  NcclTestsLog log;
  CollectiveSweep& sweep = log.sweep;
  sweep.source_file = source;
  sweep.name = std::filesystem::path(source).stem().string();
  HeaderFacts facts;
  std::optional<Layout> layout;
  std::vector<RowValues> rows;

  int line_number = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    const std::string trimmed = trim(line);
    if (trimmed.empty())
      continue;
    if (trimmed.front() == '#') {
      const std::vector<std::string> words = split_words(trimmed.substr(1));
      if (!words.empty() && (words.front() == "size" || words.front() == "size_label")) {
        if (layout)
          throw InputError(source, line_at(line_number),
                           "a second column header (line " + std::to_string(layout->header_line) +
                               " had the first): one table per file");
        layout = layout_from_header(words, line_number, source);
        continue;
      }
      read_comment(std::string_view(trimmed).substr(1), facts, line_number, log.warnings, source);
      continue;
    }
    std::vector<std::string> words = split_words(trimmed);
    // Busbw-only tables start rows with a size label ("1K"); nccl-tests rows with the size.
    const bool numeric_row =
        (layout && layout->busbw_only) || (!words.empty() && to_integer(words.front()).has_value());
    if (!numeric_row) {
      if (layout && !rows.empty() && !facts.footer_seen)
        log.warnings.push_back(source + ": " + line_at(line_number) +
                               ": unrecognised line inside the table ignored");
      continue;
    }
    if (!layout)
      throw InputError(source, line_at(line_number), "data row before any column header");
    if (words.size() != layout->field_count)
      throw InputError(source, line_at(line_number),
                       "row has " + std::to_string(words.size()) +
                           " fields where the header (line " + std::to_string(layout->header_line) +
                           ") has " + std::to_string(layout->field_count) + ": truncated table");
    const auto bytes = to_integer(words[layout->size]);
    // nccl-tests prints size 0 when -b is below one element per rank (all_gather_perf -b 8 on
    // 2 GPUs): nothing was moved, so the row carries no measurement.
    if (bytes && *bytes == 0 && rows.empty()) {
      log.warnings.push_back(source + ": " + line_at(line_number) +
                             ": size 0 row (count rounded down to 0 per rank) ignored");
      continue;
    }
    if (!bytes || *bytes <= 0 || *bytes > io::kMaxBytes)
      throw InputError(source, line_at(line_number),
                       "size '" + words[layout->size] + "' is not a byte count in [1, " +
                           std::to_string(io::kMaxBytes) + "]");
    if (!rows.empty() && *bytes <= rows.back().bytes)
      throw InputError(source, line_at(line_number),
                       "size " + std::to_string(*bytes) + " does not grow from the previous row (" +
                           std::to_string(rows.back().bytes) + " on line " +
                           std::to_string(rows.back().line) + "): non-monotone sizes");
    rows.push_back({*bytes, line_number, std::move(words)});
  }
  if (!layout)
    throw InputError(source, "header", "no nccl-tests column header ('# size ...') found");
  if (rows.empty())
    throw InputError(source, line_at(layout->header_line), "the table has no data rows");

  const auto kind = collective_from(facts, source);
  if (!kind)
    throw InputError(source, "header",
                     "cannot tell the collective: no '# collective:' header and no *_perf command");
  sweep.kind = *kind;

  // GPU count: declared in the header, counted from rank lines, checked against busbw/algbw.
  std::optional<int> declared;
  if (auto it = facts.keys.find("gpus"); it != facts.keys.end()) {
    declared = leading_integer(it->second);
    if (!declared || *declared < 1)
      throw InputError(source, "gpus", "'" + it->second + "' is not a GPU count");
  }
  if (facts.rank_lines > 0) {
    if (declared && *declared != facts.rank_lines)
      throw InputError(source, "gpus",
                       "header says " + std::to_string(*declared) + " GPUs but the log lists " +
                           std::to_string(facts.rank_lines) + " ranks: mismatched GPU count");
    declared = facts.rank_lines;
  }
  if (!layout->busbw_only) {
    std::vector<double> ratios;
    for (const auto& row : rows) {
      for (const auto& columns : layout->placements) {
        const auto algbw = to_double(row.words[columns.algbw]);
        const auto busbw = to_double(row.words[columns.busbw]);
        if (algbw && busbw && *algbw >= 1.0)  // two printed decimals: enough digits
          ratios.push_back(*busbw / *algbw);
      }
    }
    if (!ratios.empty()) {
      std::sort(ratios.begin(), ratios.end());
      const double ratio = ratios[ratios.size() / 2];
      const auto implied = ranks_from_ratio(sweep.kind, ratio);
      if (declared && implied && *implied != *declared &&
          std::abs(ratio / bus_factor(sweep.kind, *declared) - 1.0) > 0.02)
        throw InputError(source, "gpus",
                         "header says " + std::to_string(*declared) +
                             " GPUs but busbw/algbw = " + std::to_string(ratio) + " implies " +
                             std::to_string(*implied) + ": mismatched GPU count");
      if (!declared && implied) {
        declared = implied;
        log.warnings.push_back(source + ": gpus: no GPU count given; " + std::to_string(*implied) +
                               " inferred from busbw/algbw");
      }
    }
  }
  if (!declared)
    throw InputError(source, "gpus",
                     "no GPU count: add '# gpus: N' (needed to relate bus bandwidth and time)");
  sweep.n_ranks = *declared;

  if (auto it = facts.keys.find("nodes"); it != facts.keys.end()) {
    const auto nodes = leading_integer(it->second);
    if (!nodes || *nodes < 1 || *nodes > sweep.n_ranks)
      throw InputError(source, "nodes",
                       "'" + it->second + "' is not a node count for " +
                           std::to_string(sweep.n_ranks) + " GPUs");
    if (!facts.hosts.empty() && static_cast<int>(facts.hosts.size()) != *nodes)
      throw InputError(source, "nodes",
                       "header says " + std::to_string(*nodes) + " nodes but the rank lines name " +
                           std::to_string(facts.hosts.size()) + " hosts");
    sweep.n_nodes = *nodes;
  } else if (!facts.hosts.empty()) {
    sweep.n_nodes = static_cast<int>(facts.hosts.size());
  } else {
    sweep.n_nodes = 1;
    log.warnings.push_back(source + ": nodes: no node count given; assuming 1");
  }
  if (sweep.n_ranks % sweep.n_nodes != 0)
    throw InputError(source, "nodes",
                     std::to_string(sweep.n_ranks) + " GPUs do not split evenly over " +
                         std::to_string(sweep.n_nodes) + " nodes");

  for (const auto& [key, value] : facts.keys)
    sweep.metadata[key] = value;
  if (!facts.device.empty())
    sweep.metadata.emplace("device", facts.device);
  if (!layout->busbw_only && !facts.footer_seen)
    log.warnings.push_back(source + ": " + line_at(rows.back().line) +
                           ": no '# Avg bus bandwidth' footer after the last row: the run may "
                           "have been cut short (truncated table)");

  const double factor = bus_factor(sweep.kind, sweep.n_ranks);
  if (layout->busbw_only) {
    sweep.time_derived_from_busbw = true;
    const std::string collective_text =
        facts.keys.count("collective") ? facts.keys.at("collective") : "";
    const bool in_place = collective_text.find("in-place") != std::string::npos &&
                          collective_text.find("out-of-place") == std::string::npos;
    for (const auto& row : rows) {
      const auto busbw = to_double(row.words[layout->busbw_only_value]);
      if (busbw && !(*busbw <= kMaxBandwidthGBps))  // "inf" parses; 1e300 GB/s is a typo
        throw InputError(source, line_at(row.line),
                         "busbw '" + row.words[layout->busbw_only_value] + "' is above " +
                             io::format_number(kMaxBandwidthGBps) + " GB/s");
      if (!busbw || !(*busbw > 0.0)) {
        log.warnings.push_back(source + ": " + line_at(row.line) + ": busbw '" +
                               row.words[layout->busbw_only_value] +
                               "' gives no time; row dropped");
        continue;
      }
      CollectiveSample sample;
      sample.bytes = row.bytes;
      sample.busbw_GBps = *busbw;
      sample.algbw_GBps = *busbw / factor;
      sample.time_us =
          static_cast<double>(row.bytes) * factor / (*busbw * kBytesPerGB) * kUsPerSecond;
      sample.in_place = in_place;
      sweep.samples.push_back(sample);
    }
  } else {
    for (const auto& columns : layout->placements) {
      for (const auto& row : rows) {
        const auto time = to_double(row.words[columns.time]);
        if (!time || !(*time > 0.0) || !(*time <= io::kMaxDurationUs))
          throw InputError(source, line_at(row.line),
                           "time '" + row.words[columns.time] +
                               "' is not a positive number of at most " +
                               io::format_number(io::kMaxDurationUs) + " us");
        if (columns.wrong) {
          const std::string& cell = row.words[*columns.wrong];
          if (columns.wrong_is_count) {
            const auto wrong = to_integer(cell);
            if (wrong && *wrong > 0) {
              log.warnings.push_back(
                  source + ": " + line_at(row.line) + ": " + cell + " wrong results (" +
                  (columns.in_place ? "in-place" : "out-of-place") + "); row dropped");
              continue;
            }
          } else if (const auto error = to_double(cell); error && *error > 1e-3) {
            log.warnings.push_back(source + ": " + line_at(row.line) + ": error " + cell + " (" +
                                   (columns.in_place ? "in-place" : "out-of-place") +
                                   ") above 1e-3; row dropped");
            continue;
          }
        }
        CollectiveSample sample;
        sample.bytes = row.bytes;
        sample.time_us = *time;
        sample.algbw_GBps = to_double(row.words[columns.algbw]).value_or(0.0);
        sample.busbw_GBps = to_double(row.words[columns.busbw]).value_or(0.0);
        sample.in_place = columns.in_place;
        sweep.samples.push_back(sample);
      }
    }
    if (layout->type)
      sweep.metadata.emplace("dtype", rows.front().words[*layout->type]);
  }
  if (sweep.samples.empty())
    throw InputError(source, line_at(layout->header_line), "no usable rows left in the table");
  return log;
}

NcclTestsLog read_nccl_tests_log(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path, "", "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_nccl_tests_log(text.str(), path);
}

}  // namespace perfsim::collectives
