// Issue 20: numbers in model, topology, device, DLRM, sweep and calibration files that were
// truncated, overflowed or passed unchecked (a silent wrong answer or a hang) are InputErrors
// naming the file and the field. Each case mutates one field of a shipped config.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "generators/dlrm/dlrm_config.hpp"
#include "generators/llm/llm_model_config.hpp"
#include "perfsim/error.hpp"
#include "sweep/sweep_spec.hpp"
#include "topology/topology.hpp"
#include "validation/end_to_end_calibration.hpp"

namespace perfsim {
namespace {

std::string config(const std::string& relative) {
  std::ifstream in(std::string(PERFSIM_SOURCE_DIR) + "/configs/" + relative);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << relative;
  return text.str();
}

std::string replaced(std::string json, const std::string& from, const std::string& to) {
  const auto at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    json.replace(at, from.size(), to);
  return json;
}

using Parse = std::function<void(const std::string& text, const std::string& file)>;

void expect_rejected(const Parse& parse, const std::string& text, const std::string& field) {
  try {
    parse(text, "mutant.json");
    FAIL() << "accepted (expected an error at " << field << ")";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "mutant.json");
    EXPECT_NE(error.location().find(field), std::string::npos) << error.what();
  }
}

const Parse kModel = [](const std::string& text, const std::string& file) {
  generators::llm::parse_transformer_config(text, file);
};
const Parse kTopology = [](const std::string& text, const std::string& file) {
  topology::parse_topology(text, file);
};
const Parse kDevice = [](const std::string& text, const std::string& file) {
  devices::parse_device_json(text, file);
};
const Parse kDlrm = [](const std::string& text, const std::string& file) {
  generators::dlrm::parse_dlrm_config(text, file);
};
const Parse kSweep = [](const std::string& text, const std::string& file) {
  sweep::parse_sweep(text, file);
};
const Parse kCalibration = [](const std::string& text, const std::string& file) {
  validation::parse_calibration(text, file);
};

TEST(ConfigNumbers, ShippedConfigsStillLoad) {
  kModel(config("models/llama3-8b.json"), "m");
  kTopology(config("topologies/hgx-h100-2node.json"), "t");
  kDevice(config("devices/H100-SXM.json"), "d");
  kDlrm(config("dlrm/dlrm-small-4gpu.json"), "r");
  kSweep(config("sweeps/llama3-8b-layouts.json"), "s");
  kCalibration(config("assets/llm_calibration.json"), "c");
}

TEST(ConfigNumbers, ModelLayerCountsAreNeitherTruncatedNorUnbounded) {
  const std::string model = config("models/llama3-8b.json");
  // 2^31 - 1 layers: rejected before generation (it used to run until killed).
  expect_rejected(kModel, replaced(model, "\"layers\": 32", "\"layers\": 2147483647"), "layers");
  // 2^32 + 1 layers: get<int> made it 1 layer, a silent wrong answer.
  expect_rejected(kModel, replaced(model, "\"layers\": 32", "\"layers\": 4294967297"), "layers");
  expect_rejected(kModel, replaced(model, "\"vocab\": 128256", "\"vocab\": 1e300"), "vocab");
  expect_rejected(kModel, replaced(model, "\"hidden\": 4096", "\"hidden\": 4096.5"), "hidden");
}

TEST(ConfigNumbers, TopologyCountsAndFiguresAreBounded) {
  const std::string topology = config("topologies/hgx-h100-2node.json");
  expect_rejected(kTopology, replaced(topology, "\"gpus\": 8", "\"gpus\": 4294967304"),
                  "/node/gpus");
  expect_rejected(kTopology, replaced(topology, "\"nodes\": 2", "\"nodes\": 1000000"), "/nodes");
  expect_rejected(kTopology,
                  replaced(topology, "\"bandwidth_GBps\": 450", "\"bandwidth_GBps\": 1e300"),
                  "bandwidth_GBps");
  // A GPU id of 2^32 was read as GPU 0.
  expect_rejected(
      kTopology,
      replaced(topology, "\"gpus\": [\n            0", "\"gpus\": [\n            4294967296"),
      "gpus/0");
}

TEST(ConfigNumbers, DeviceFiguresAreBounded) {
  const std::string device = config("devices/H100-SXM.json");
  expect_rejected(kDevice, replaced(device, "\"value\": 3350", "\"value\": 1e-300"),
                  "/hbm_bandwidth_GBps/value");
  expect_rejected(kDevice, replaced(device, "\"value\": 3350", "\"value\": 1e300"),
                  "/hbm_bandwidth_GBps/value");
}

TEST(ConfigNumbers, DlrmSizesAreBounded) {
  const std::string dlrm = config("dlrm/dlrm-small-4gpu.json");
  expect_rejected(kDlrm, replaced(dlrm, "\"count\": 52", "\"count\": 4294967348"),
                  "/table_generator/count");
  expect_rejected(kDlrm, replaced(dlrm, "\"ranks\": 4", "\"ranks\": 4611686018427387904"),
                  "/ranks");
  expect_rejected(
      kDlrm,
      replaced(dlrm, "\"bottom_mlp\": [512, 256, 64]", "\"bottom_mlp\": [512, 256, 68719476736]"),
      "/bottom_mlp/2");
}

TEST(ConfigNumbers, SweepRankProductsDoNotOverflow) {
  const std::string sweep = config("sweeps/llama3-8b-layouts.json");
  // 65536^3 overflowed int (undefined behaviour) in the world size of the task.
  std::string mutant =
      replaced(sweep, "{\"tp\": 4, \"pp\": 1, \"dp\": 1, \"sequence-parallel\": true}",
               "{\"tp\": 65536, \"pp\": 65536, \"dp\": 65536}");
  expect_rejected(kSweep, mutant, "task");
  expect_rejected(kSweep,
                  replaced(sweep, "\"slurm\"", "\"max_processes_per_task\": 4294967297, \"slurm\""),
                  "/max_processes_per_task");
}

TEST(ConfigNumbers, CalibrationSchemaOfTheWrongTypeIsAnInputError) {
  // nlohmann's value() threw type_error (exit 1) for a schema that is not a string.
  expect_rejected(kCalibration, R"({"schema": 5})", "schema");
}

}  // namespace
}  // namespace perfsim
