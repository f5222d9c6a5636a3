#pragma once
// Measured tables in CSV with a header row (DeepBench kernel tables, run tables): one reader so
// that every table skips the same lines, splits cells the same way and reports a bad cell with
// its file, line and column.
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::io {

// One CSV record: commas separate, double quotes protect commas, "" inside quotes is a quote;
// a carriage return is dropped and each cell is trimmed of spaces and tabs.
std::vector<std::string> split_csv_record(std::string_view line);

class CsvTable {
 public:
  struct Row {
    int line = 0;  // 1-based line number in the file
    std::vector<std::string> cells;
  };

  // Reads `path`; blank lines and lines starting with '#' are skipped, the first other line is
  // the header. Throws InputError when the file cannot be opened (`what` names the table).
  static CsvTable read(const std::string& path, std::string_view what);
  // The same from text already in memory; `source` names it in errors.
  static CsvTable parse(std::string_view text, std::string source);

  const std::string& source() const { return source_; }
  const std::vector<Row>& rows() const { return rows_; }
  bool has_column(std::string_view name) const;
  // Throws InputError(source, "header", "missing column NAME") for the first one absent.
  void require_columns(std::initializer_list<const char*> names) const;

  // The cell of `column` in `row`, empty when the row is shorter than the header.
  std::string cell(const Row& row, std::string_view column) const;
  // "line N COLUMN": where a cell is, for errors.
  static std::string where(const Row& row, std::string_view column);
  // The cell as a number in [minimum, maximum]; anything else (empty, trailing text, not
  // finite) is an InputError naming the cell.
  double number(const Row& row, std::string_view column, double minimum, double maximum) const;

 private:
  std::string source_;
  std::map<std::string, std::size_t, std::less<>> column_index_;
  std::vector<Row> rows_;
};

}  // namespace perfsim::io
