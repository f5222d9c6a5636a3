#include "microbench/host/collective_results.hpp"

#include <array>
#include <string>

#include "benchmark_data/collective_benchmark_table.hpp"
#include "collectives/bus_factor.hpp"
#include "microbench/host/timing_statistics.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {

std::string collective_table_name(CollectiveKind kind, int n_ranks, int n_nodes) {
  return std::string(collective_name(kind)) + "_" + std::to_string(n_ranks) + "r_" +
         std::to_string(n_nodes) + "n";
}

collectives::CollectiveSweep to_collective_sweep(const CollectiveRun& run) {
  if (run.measurements.empty())
    throw RuntimeFailure("collective run " + run.name + ": no measurements");
  collectives::CollectiveSweep sweep;
  sweep.name = run.name;
  sweep.source_file = run.source;
  sweep.kind = run.kind;
  sweep.n_ranks = run.n_ranks;
  sweep.n_nodes = run.n_nodes;
  sweep.metadata = run.metadata;
  sweep.metadata["device"] = run.device;
  sweep.metadata["nccl"] = run.nccl;
  sweep.metadata["software"] = run.software;
  sweep.metadata["gpus"] = std::to_string(run.n_ranks);
  sweep.metadata["nodes"] = std::to_string(run.n_nodes);
  sweep.metadata["collective"] = std::string(collective_name(run.kind));
  const double factor = collectives::bus_factor(run.kind, run.n_ranks);
  for (const CollectiveMeasurement& m : run.measurements) {
    const std::string where =
        "collective run " + run.name + ", " + std::to_string(m.bytes) + " bytes";
    if (m.iteration_times_us.empty())
      throw RuntimeFailure(where + ": no timed iterations");
    const TimingSummary summary = summarize_times(m.iteration_times_us);
    if (!(summary.min_us > 0))
      throw RuntimeFailure(where + ": a non-positive iteration time");
    const BandwidthGBps algbw = bandwidth_GBps(m.bytes, summary.mean_us);
    sweep.samples.push_back({m.bytes, summary.mean_us, algbw, algbw * factor, m.in_place});
  }
  return sweep;
}

void write_collective_run(const std::string& file_path, const CollectiveRun& run,
                          bool truncate_file) {
  const collectives::CollectiveSweep sweep = to_collective_sweep(run);
  std::array<benchmark_data::ExtraSampleColumn, 7> extra{{{"bytes_nominal", "bytes", {}},
                                                          {"time_min_us", "us", {}},
                                                          {"time_p50_us", "us", {}},
                                                          {"time_p95_us", "us", {}},
                                                          {"time_p99_us", "us", {}},
                                                          {"time_max_us", "us", {}},
                                                          {"iterations", "", {}}}};
  for (const CollectiveMeasurement& m : run.measurements) {
    const TimingSummary s = summarize_times(m.iteration_times_us);
    const std::array<double, 7> values{
        static_cast<double>(m.nominal_bytes), s.min_us, s.p50_us, s.p95_us, s.p99_us, s.max_us,
        static_cast<double>(s.iterations)};
    for (std::size_t i = 0; i < extra.size(); ++i)
      extra[i].values.push_back(values[i]);
  }
  benchmark_data::write_collective_sweep(file_path, sweep, truncate_file, extra);
}

}  // namespace perfsim::microbench
