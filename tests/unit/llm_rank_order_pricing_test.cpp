// The rank order decides which groups cross nodes, and the collective model prices a group by
// where its members are (collectives/collective_model.hpp): the same gradient all-reduce is
// slower over the network than inside a node, the same pipeline transfer faster inside a node.
// TP 1 x PP 2 x DP 4 on two nodes of 4 GPUs (a DGX A100 board with 4 GPUs populated):
//   tp-dp-pp (Megatron's default): a node is one stage's DP group, pipeline pairs cross nodes;
//   tp-pp-dp (--use-tp-pp-dp-mapping): a node holds both stages of two replicas, every DP
//   group crosses the nodes.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "io/input_file.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "scenario/llm_simulation.hpp"
#include "support/small_gpt.hpp"
#include "topology/node_resize.hpp"
#include "topology/topology.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

const std::string kSource = PERFSIM_SOURCE_DIR;

struct GroupTimes {
  double gradient_all_reduce_us = 0;  // per collective, rank 0's DP group
  double pipeline_transfer_us = 0;    // per transfer, rank 0's sends and receives
  double iteration_us = 0;
};

GroupTimes simulate(const char* order) {
  llm::ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 4};
  parallel.order = llm::parse_rank_order(order, "--order");
  const std::string device_file = kSource + "/configs/devices/A100-80GB.json";
  const LlmScenario scenario{
      test_support::small_gpt(4, 768, 16),
      parallel,
      topology::resized(topology::load_topology(kSource + "/configs/topologies/dgx-a100.json"), 2,
                        4),
      io::read_file_decompressed(device_file),
      device_file,
      ""};
  std::vector<int> ranks;
  for (int rank = 0; rank < parallel.world_size(); ++rank)
    ranks.push_back(rank);
  const SimulationInputs inputs = load_llm_inputs(scenario, ranks);
  engine::InProcessClockSync sync;
  const std::vector<RankResult> results =
      engine::simulate_programs(inputs.programs, inputs.overheads, sync, false);
  GroupTimes times;
  const GroupTraffic& dp = results[0].groups.at(llm::dp_group_name(parallel, 0));
  times.gradient_all_reduce_us = dp.time_us / dp.collectives;
  double p2p_us = 0;
  int transfers = 0;
  for (const auto& [group, traffic] : results[0].groups) {
    if (group.rfind("p2p:", 0) != 0)
      continue;
    p2p_us += traffic.time_us;
    transfers += traffic.collectives;
  }
  times.pipeline_transfer_us = p2p_us / transfers;
  times.iteration_us = results[0].iteration_us;
  return times;
}

TEST(RankOrderPricing, GroupsThatCrossNodesArePricedSlower) {
  const GroupTimes standard = simulate("tp-dp-pp");
  const GroupTimes swapped = simulate("tp-pp-dp");
  // The same bytes in both orders; only the members' placement differs.
  EXPECT_GT(swapped.gradient_all_reduce_us, standard.gradient_all_reduce_us);
  EXPECT_LT(swapped.pipeline_transfer_us, standard.pipeline_transfer_us);
  std::printf(
      "DP all-reduce %.1f us (inside a node) vs %.1f us (across nodes); pipeline "
      "transfer %.1f us (across) vs %.1f us (inside); iteration %.1f vs %.1f ms\n",
      standard.gradient_all_reduce_us, swapped.gradient_all_reduce_us,
      standard.pipeline_transfer_us, swapped.pipeline_transfer_us, standard.iteration_us / 1e3,
      swapped.iteration_us / 1e3);
}

}  // namespace
}  // namespace perfsim::scenario
