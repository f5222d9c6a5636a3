// The embedded default scenario is a copy of repository files: it must stay equal to them, and
// it must describe a job the topology can hold.
#include <gtest/gtest.h>

#include "generators/llm/llm_default_scenario.hpp"
#include "generators/llm/llm_model_config.hpp"
#include "io/input_file.hpp"
#include "topology/topology.hpp"

namespace perfsim::generators::llm {
namespace {

TEST(LlmDefaultScenario, EmbeddedTextEqualsTheRepositoryFiles) {
  const DefaultScenarioFiles files = default_scenario_files();
  for (const EmbeddedFile* file : {&files.model, &files.topology, &files.device}) {
    const std::string path = std::string(PERFSIM_SOURCE_DIR) + "/" + file->path;
    EXPECT_EQ(file->text, io::read_file_decompressed(path))
        << path << " changed: copy it into src/generators/llm/llm_default_scenario_files.cpp";
  }
}

TEST(LlmDefaultScenario, FitsEightNodesOfEightGpus) {
  const DefaultScenarioFiles files = default_scenario_files();
  const TransformerConfig model = parse_transformer_config(files.model.text, files.model.path);
  const ParallelConfig parallel = default_scenario_parallel();
  EXPECT_NO_THROW(validate(model, parallel));
  const topology::Topology topology =
      topology::parse_topology(files.topology.text, files.topology.path);
  EXPECT_EQ(topology.nodes, 8);
  EXPECT_EQ(topology.node.gpus, 8);
  EXPECT_EQ(parallel.world_size(), topology.world_size());
  EXPECT_EQ(parallel.tp, topology.node.gpus);  // TP groups stay inside a node
  EXPECT_EQ(micro_batches_per_iteration(model, parallel), 64);
}

}  // namespace
}  // namespace perfsim::generators::llm
