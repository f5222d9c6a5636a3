#pragma once
// Reads a comma-separated fixture (such as ../shared/data/llm/korthikanti2022.csv) as rows of
// column -> text, skipping blank lines and '#' comments; the first other line is the header.
// A missing file is a test failure, not an empty table that could pass silently.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace perfsim::testing {

inline std::vector<std::map<std::string, std::string>> read_csv_rows(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    ADD_FAILURE() << "missing fixture " << path;
  auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::stringstream stream(text);
    std::string cell;
    while (std::getline(stream, cell, ','))
      cells.push_back(cell);
    return cells;
  };
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<std::string> header;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    const std::vector<std::string> cells = split(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i)
      row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace perfsim::testing
