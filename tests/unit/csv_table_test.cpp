// The CSV reader shared by the measured kernel tables and run tables (io/csv_table.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/csv_table.hpp"
#include "perfsim/error.hpp"

namespace perfsim::io {
namespace {

TEST(CsvTable, SplitsQuotedCellsAndTrims) {
  const std::vector<std::string> cells = split_csv_record(" a ,\"b, c\",\"say \"\"hi\"\"\",\r");
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0], "a");
  EXPECT_EQ(cells[1], "b, c");
  EXPECT_EQ(cells[2], "say \"hi\"");
  EXPECT_EQ(cells[3], "");
}

TEST(CsvTable, SkipsCommentsAndBlankLinesAndKeepsLineNumbers) {
  const CsvTable table = CsvTable::parse("# note\nM,N\r\n\n1,2\n# again\n3\n", "t.csv");
  ASSERT_EQ(table.rows().size(), 2u);
  EXPECT_EQ(table.rows()[0].line, 4);
  EXPECT_EQ(table.rows()[1].line, 6);
  EXPECT_EQ(table.cell(table.rows()[0], "N"), "2");
  EXPECT_EQ(table.cell(table.rows()[1], "N"), "");  // short row: empty cell
  EXPECT_DOUBLE_EQ(table.number(table.rows()[1], "M", 0, 10), 3.0);
  EXPECT_TRUE(table.has_column("M"));
  EXPECT_FALSE(table.has_column("K"));
}

TEST(CsvTable, ErrorsNameFileLineAndColumn) {
  const CsvTable table = CsvTable::parse("M,N\n1,x\n2,20\n", "t.csv");
  try {
    table.number(table.rows()[0], "N", 0, 100);
    FAIL() << "a non-number was accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "t.csv");
    EXPECT_EQ(error.location(), "line 2 N");
  }
  EXPECT_THROW(table.number(table.rows()[1], "N", 0, 10), InputError);  // out of range
  try {
    table.require_columns({"M", "K"});
    FAIL() << "a missing column was accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.problem(), "missing column K");
  }
  EXPECT_THROW(CsvTable::read("/nonexistent/table.csv", "GEMM table"), InputError);
}

}  // namespace
}  // namespace perfsim::io
