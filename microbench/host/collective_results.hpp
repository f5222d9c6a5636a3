#pragma once
// A measured collective sweep (perfsim-bench-collectives) turned into the benchmark HDF5
// table that `perfsim import nccl-tests` also writes and `perfsim fit` reads
// (benchmark_data/collective_benchmark_table.hpp), with nccl-tests' algbw and busbw
// (algbw = size / time, busbw = algbw * collectives::bus_factor) and the time percentiles as
// extra columns: bytes_nominal, time_min_us, time_p50_us, time_p95_us, time_p99_us,
// time_max_us, iterations. time_us is the mean, as nccl-tests reports it.
#include <map>
#include <string>
#include <vector>

#include "collectives/collective_sweep.hpp"
#include "perfsim/comm.hpp"
#include "perfsim/units.hpp"

namespace perfsim::microbench {

struct CollectiveMeasurement {
  Bytes bytes = 0;          // nccl-tests size; all-to-allv: max over ranks of max(sent, recv)
  Bytes nominal_bytes = 0;  // the sweep's size (all-to-allv: what each rank sends)
  bool in_place = false;
  std::vector<double> iteration_times_us;  // per timed iteration, the slowest rank's time
};

struct CollectiveRun {
  std::string name;  // table name under /benchmarks/collective
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int n_ranks = 0;
  int n_nodes = 1;
  std::string device;                           // "8x NVIDIA H100 80GB HBM3"
  std::string nccl;                             // NCCL version, "2.28.9"
  std::string software;                         // CUDA runtime and driver versions
  std::string source;                           // tool, mode and command line
  std::map<std::string, std::string> metadata;  // topology, clocks, ... (header_<key>)
  std::vector<CollectiveMeasurement> measurements;
};

// "all_reduce_8r_1n", "all_to_allv_16r_2n": what a run's table is called by default.
std::string collective_table_name(CollectiveKind kind, int n_ranks, int n_nodes);

// Throws RuntimeFailure for a run without measurements, a measurement without timed
// iterations or with a non-positive time.
collectives::CollectiveSweep to_collective_sweep(const CollectiveRun& run);

// Writes /benchmarks/collective/<run.name> with the extra columns (truncate_file: start a new
// file).
void write_collective_run(const std::string& file_path, const CollectiveRun& run,
                          bool truncate_file = false);

}  // namespace perfsim::microbench
