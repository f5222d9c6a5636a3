#pragma once
// The predicted figures of one finished task, read back from its results file
// (src/results/results_file.hpp: /runs/<run>/{ranks,streams,groups}).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace perfsim::sweep {

// Named figures in a fixed order (per-stream and per-group-kind names depend on the run):
//   iteration_us           max over ranks of the rank's iteration time (the iteration time)
//   mean_iteration_us      mean over ranks
//   slowest_rank
//   gpu_busy_us, gpu_idle_us, and the seed 001 Fig. 2 breakdown embedding_lookup_us,
//   gemm_us, memory_us, other_us, communication_us: means over ranks
//   comm_time_us           max over ranks of the rank's summed collective time
//   exposed_comm_us        max over ranks of the time the rank's compute waited for collectives
//   stream<id>_busy_us     per stream id, mean over ranks of its busy time
//   exposed_<kind>_us      per group kind ("tp/3" -> tp, "p2p:0->2" -> p2p, "world"), max
//                          over ranks of the rank's sum over the groups of that kind
using TaskFigures = std::vector<std::pair<std::string, double>>;

TaskFigures read_task_figures(const std::filesystem::path& results_file,
                              const std::string& run_name);

}  // namespace perfsim::sweep
