#pragma once
// Text renderings of an h5::ColumnTable: CSV (for pandas, spreadsheets and diff) and an
// aligned table for the terminal.
#include <string>
#include <vector>

#include "hdf5/column_table.hpp"

namespace perfsim::sweep {

// One cell as text: integers as is, doubles with 12 significant digits, NaN as "".
std::string cell_text(const h5::ColumnTable& table, const std::string& column, std::size_t row);

// Header row of column names, then one line per row; fields with a comma, quote or newline
// are quoted (RFC 4180).
std::string table_to_csv(const h5::ColumnTable& table);

// Right-aligned columns (all of the table's columns when `columns` is empty); columns in "us"
// to 0.1 us.
std::string table_to_text(const h5::ColumnTable& table, const std::vector<std::string>& columns);

}  // namespace perfsim::sweep
