#pragma once
// `perfsim simulate --dlrm CONFIG ...`: a generated DLRM training iteration instead of traces.
// --topology, --device and --assets are shared with the LLM branch (LlmSimulateOptions).
#include <cstdint>
#include <optional>
#include <string>

namespace perfsim::scenario {

struct DlrmSimulateOptions {
  std::string config_path;  // configs/dlrm/*.json; empty: no DLRM workload
  // Seed 001 Sec. V-B1 sets size_lookup_greedy for its E2E tests.
  std::string sharder = "size_lookup_greedy";
  int batch_per_gpu = 0;  // 0: the config's
  int tables = 0;         // 0: the config's
  int ranks = 0;          // 0: the config's
  std::optional<std::uint64_t> seed;
  std::optional<double> memory_cap_GB;
  std::string pooling;  // "" = the config's; "dlrm-2021" or "dlrm-2022" (sampled configs)
  bool heavy_only = false;

  bool requested() const { return !config_path.empty(); }
};

}  // namespace perfsim::scenario
