#pragma once
// A table in HDF5 as one group with one 1-D dataset per column (float64, int64 or
// variable-length UTF-8 string), all of the same length, plus string attributes. h5py reads it
// as `{k: g[k][()] for k in g}`, pandas as pd.DataFrame of that. Each column may carry a
// "units" attribute ("us", "bytes", "GBps").
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace perfsim::h5 {

using Column =
    std::variant<std::vector<double>, std::vector<std::int64_t>, std::vector<std::string>>;

struct ColumnTable {
  std::vector<std::string> column_order;  // order columns were added
  std::map<std::string, Column> columns;
  std::map<std::string, std::string> units;       // column -> unit
  std::map<std::string, std::string> attributes;  // table-level metadata

  void add(const std::string& name, Column column, const std::string& unit = "");
  std::size_t rows() const;  // throws RuntimeFailure when columns differ in length
  const std::vector<double>& doubles(const std::string& name) const;
  const std::vector<std::int64_t>& integers(const std::string& name) const;
  const std::vector<std::string>& strings(const std::string& name) const;
};

// An HDF5 file written whole. Tables go into an in-memory image that starts as a copy of the
// existing file (unless truncating); commit() writes the image through io::write_file_atomically
// (temporary file + rename). A write that fails (disk full, read-only directory) or is never
// committed leaves the previous file untouched, and HDF5 itself never meets the I/O error.
// Throws RuntimeFailure naming the file.
class OutputFile {
 public:
  OutputFile(std::string file_path, bool truncate_file);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes `table` as group `group_path` (parents created; an existing group is replaced).
  void write_table(const std::string& group_path, const ColumnTable& table);
  void commit();

 private:
  struct Image;
  std::string file_path_;
  std::unique_ptr<Image> image_;
};

// Before a long computation whose output OutputFile(file_path, false) will add to: throws
// InputError when file_path exists but is not an HDF5 file (it could never be added to).
void check_appendable(const std::string& file_path);

// One table into a file at once: OutputFile, write_table, commit.
void write_table(const std::string& file_path, const std::string& group_path,
                 const ColumnTable& table, bool truncate_file = false);
ColumnTable read_table(const std::string& file_path, const std::string& group_path);
// Names of the direct subgroups of `group_path` ("/" for the root), sorted.
std::vector<std::string> list_groups(const std::string& file_path, const std::string& group_path);
bool group_exists(const std::string& file_path, const std::string& group_path);

}  // namespace perfsim::h5
