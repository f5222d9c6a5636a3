#include "io/csv_table.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "io/checked_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::io {

std::vector<std::string> split_csv_record(std::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  for (std::string& cell : cells) {
    const auto first = cell.find_first_not_of(" \t");
    const auto last = cell.find_last_not_of(" \t");
    cell = first == std::string::npos ? std::string() : cell.substr(first, last - first + 1);
  }
  return cells;
}

CsvTable CsvTable::read(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path, "", "cannot open " + std::string(what));
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

CsvTable CsvTable::parse(std::string_view text, std::string source) {
  CsvTable table;
  table.source_ = std::move(source);
  bool have_header = false;
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty() || line.front() == '#')
      continue;
    std::vector<std::string> cells = split_csv_record(line);
    if (!have_header) {
      for (std::size_t i = 0; i < cells.size(); ++i)
        table.column_index_.emplace(cells[i], i);
      have_header = true;
      continue;
    }
    table.rows_.push_back({number, std::move(cells)});
  }
  return table;
}

bool CsvTable::has_column(std::string_view name) const {
  return column_index_.find(name) != column_index_.end();
}

void CsvTable::require_columns(std::initializer_list<const char*> names) const {
  for (const char* name : names)
    if (!has_column(name))
      throw InputError(source_, "header", std::string("missing column ") + name);
}

std::string CsvTable::cell(const Row& row, std::string_view column) const {
  const auto found = column_index_.find(column);
  if (found == column_index_.end())
    throw InputError(source_, "header", "missing column " + std::string(column));
  return found->second < row.cells.size() ? row.cells[found->second] : std::string();
}

std::string CsvTable::where(const Row& row, std::string_view column) {
  return "line " + std::to_string(row.line) + " " + std::string(column);
}

double CsvTable::number(const Row& row, std::string_view column, double minimum,
                        double maximum) const {
  const std::string text = cell(row, column);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value))
    throw InputError(source_, where(row, column), "must be a number, got \"" + text + "\"");
  return checked_real(value, minimum, maximum, source_, where(row, column));
}

}  // namespace perfsim::io
