#pragma once
// Reading nccl-tests output (all_reduce_perf and friends) into a CollectiveSweep.
//
// Accepted layouts, told apart by the column header line:
//   current:  size count type redop root  time algbw busbw #wrong  time algbw busbw #wrong
//   2019-era: size count type redop       time algbw busbw error   time algbw busbw error
//   busbw-only tables (the Azure benchmarking pages): size_label size_bytes_inferred busbw_GBps
// plus "# key: value" comment headers (gpus, nodes, collective, hardware, nccl, ...) as in
// shared/data/nccl-tests, and the "#  Rank N Group ... on HOST device ..." lines of a raw log.
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective_sweep.hpp"

namespace perfsim::collectives {

struct NcclTestsLog {
  CollectiveSweep sweep;
  // Problems that leave usable data: rows with #wrong > 0 (dropped), a missing footer, a
  // GPU or node count that had to be inferred. Each names the source and line.
  std::vector<std::string> warnings;
};

// Throws InputError (file = source, location = "line N" or the header key) for: no column
// header, a data row whose field count differs from the header (truncated table), a size that
// does not grow from one row to the next (non-monotone sizes), a GPU count that disagrees with
// the rank lines or with busbw/algbw, an unknown collective, a busbw-only table without a GPU
// count, and a table without any usable row.
NcclTestsLog parse_nccl_tests_log(std::string_view text, const std::string& source);

// Reads `path` (plain text) and parses it; the sweep is named after
// the file's stem.
NcclTestsLog read_nccl_tests_log(const std::string& path);

}  // namespace perfsim::collectives
