#include "sweep/table_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <variant>

namespace perfsim::sweep {
namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos)
    return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"')
      quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace

std::string cell_text(const h5::ColumnTable& table, const std::string& column, std::size_t row) {
  const h5::Column& values = table.columns.at(column);
  if (const auto* doubles = std::get_if<std::vector<double>>(&values)) {
    const double value = (*doubles)[row];
    if (std::isnan(value))
      return "";
    char text[40];
    std::snprintf(text, sizeof(text), "%.12g", value);
    return text;
  }
  if (const auto* integers = std::get_if<std::vector<std::int64_t>>(&values))
    return std::to_string((*integers)[row]);
  return std::get<std::vector<std::string>>(values)[row];
}

std::string table_to_csv(const h5::ColumnTable& table) {
  std::string out;
  for (std::size_t c = 0; c < table.column_order.size(); ++c)
    out += (c ? "," : "") + csv_field(table.column_order[c]);
  out += "\n";
  const std::size_t rows = table.rows();
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t c = 0; c < table.column_order.size(); ++c)
      out += (c ? "," : "") + csv_field(cell_text(table, table.column_order[c], row));
    out += "\n";
  }
  return out;
}

std::string table_to_text(const h5::ColumnTable& table, const std::vector<std::string>& columns) {
  std::vector<std::string> chosen;
  for (const std::string& column : columns.empty() ? table.column_order : columns) {
    if (table.columns.count(column))
      chosen.push_back(column);
  }
  const std::size_t rows = table.rows();
  std::vector<std::vector<std::string>> cells(rows + 1);
  std::vector<std::size_t> widths(chosen.size());
  for (std::size_t c = 0; c < chosen.size(); ++c) {
    cells[0].push_back(chosen[c]);
    // Times to 0.1 us on the terminal; the CSV keeps every digit.
    const auto unit = table.units.find(chosen[c]);
    const bool time_column = unit != table.units.end() && unit->second == "us";
    for (std::size_t row = 0; row < rows; ++row) {
      std::string text = cell_text(table, chosen[c], row);
      if (time_column && !text.empty()) {
        char fixed[40];
        std::snprintf(fixed, sizeof(fixed), "%.1f", table.doubles(chosen[c])[row]);
        text = fixed;
      }
      cells[row + 1].push_back(text);
    }
    for (const auto& line : cells)
      widths[c] = std::max(widths[c], line[c].size());
  }
  std::string out;
  for (const auto& line : cells) {
    for (std::size_t c = 0; c < chosen.size(); ++c)
      out += std::string(widths[c] - line[c].size() + (c ? 2 : 0), ' ') + line[c];
    out += "\n";
  }
  return out;
}

}  // namespace perfsim::sweep
