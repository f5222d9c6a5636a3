// `perfsim plan` when layouts divide the model but none fits in memory: it names the layout
// that needs the least (DeepSeek-V3, 671 B parameters, on 64 H100s: every layout is out of
// memory), instead of an empty table alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "devices/device_spec.hpp"
#include "io/input_file.hpp"
#include "memory/device_memory.hpp"
#include "scenario/plan_report.hpp"
#include "scenario/plan_simulation.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

PlanRequest request_for(const std::string& model, int gpus) {
  const std::string source = PERFSIM_SOURCE_DIR;
  const devices::DeviceSpec device =
      devices::load_device_file(source + "/configs/devices/H100-SXM.json");
  PlanRequest request;
  request.model = llm::load_transformer_config(source + "/configs/models/" + model + ".json");
  request.topology = topology::load_topology(source + "/configs/topologies/hgx-h100-8node.json");
  request.device_json = io::read_file_decompressed(device.file);
  request.device_file = device.file;
  request.device_memory = memory::device_memory_of(device);
  request.limits.gpus = gpus;
  request.limits.gpus_per_node = request.topology.node.gpus;
  return request;
}

TEST(PlannerNothingFits, NamesTheLeanestLayoutAndWhatItNeeds) {
  const PlanRequest request = request_for("deepseek-v3", 64);
  const PlanOutcome outcome = plan_layouts(request);
  ASSERT_GT(outcome.layouts, 0u);
  ASSERT_EQ(outcome.out_of_memory, outcome.layouts);
  ASSERT_TRUE(outcome.search.top.empty());
  const auto leanest = leanest_not_fitting(outcome);
  ASSERT_TRUE(leanest.has_value());
  const Bytes need = leanest->memory.worst().total_bytes;
  EXPECT_GT(need, request.device_memory.capacity_bytes);
  for (const planner::FittingLayout& layout : outcome.not_fitting)
    EXPECT_GE(layout.memory.worst().total_bytes, need);
  const std::string text = nothing_fits_text(*leanest, request.device_memory);
  EXPECT_NE(text.find("no layout fits in 79.19 GiB per GPU: the leanest, " +
                      planner::short_layout_name(leanest->parallel)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("x the capacity"), std::string::npos) << text;
  const auto doc = plan_json(request, outcome, nullptr, 0.0);
  EXPECT_EQ(doc["leanest_out_of_memory"]["total_bytes"].get<Bytes>(), need);
}

}  // namespace
}  // namespace perfsim::scenario
