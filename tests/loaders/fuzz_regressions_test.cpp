// Every input under tests/data/fuzz_regressions/<target>/ once crashed a loader under
// tests/fuzz (an escaping non-InputError exception, a sanitizer finding or a hang). Each must now
// be loaded or rejected with an InputError naming the file: the same contract as the fuzz
// targets, checked without clang or libFuzzer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/nccl_tests_log.hpp"
#include "devices/device_spec.hpp"
#include "generators/dlrm/dlrm_config.hpp"
#include "generators/llm/llm_model_config.hpp"
#include "overheads/overhead_asset.hpp"
#include "perfsim/error.hpp"
#include "sweep/sweep_spec.hpp"
#include "topology/topology.hpp"
#include "trace_io/chakra_et.hpp"
#include "trace_io/chakra_json_loader.hpp"
#include "trace_io/execution_trace_loader.hpp"
#include "trace_io/kineto_loader.hpp"
#include "trace_io/kineto_memory_events.hpp"
#include "validation/end_to_end_calibration.hpp"
#include "validation/run_table.hpp"

namespace perfsim {
namespace {

using Loader = std::function<void(const std::string& text, const std::string& source)>;

// The loaders of tests/fuzz/fuzz_<target>.cpp, by target name.
const std::map<std::string, Loader>& loaders() {
  static const std::map<std::string, Loader> table = {
      {"kineto",
       [](const std::string& text, const std::string& source) {
         try {
           trace_io::load_kineto_trace(io::InputBytes{source, text});
         } catch (const InputError& error) {
           EXPECT_EQ(error.file(), source) << error.what();
         }
         trace_io::read_kineto_memory_events(io::InputBytes{source, text});
       }},
      {"execution_trace",
       [](const std::string& text, const std::string& source) {
         load_execution_trace(io::InputBytes{source, text});
       }},
      {"chakra_json",
       [](const std::string& text, const std::string& source) {
         load_chakra_json(io::InputBytes{source, text});
       }},
      {"chakra_et",
       [](const std::string& text, const std::string& source) {
         if (chakra_et_available())  // without protobuf the target is not built either
           load_chakra_et(io::InputBytes{source, text});
       }},
      {"llm_model",
       [](const std::string& text, const std::string& source) {
         generators::llm::parse_transformer_config(text, source);
       }},
      {"device", [](const std::string& text,
                    const std::string& source) { devices::parse_device_json(text, source); }},
      {"topology", [](const std::string& text,
                      const std::string& source) { topology::parse_topology(text, source); }},
      {"sweep", [](const std::string& text,
                   const std::string& source) { sweep::parse_sweep(text, source); }},
      {"host_overheads",
       [](const std::string& text, const std::string& source) {
         overheads::host_overheads_from_json(text, source);
       }},
      {"nccl_tests_log",
       [](const std::string& text, const std::string& source) {
         collectives::parse_nccl_tests_log(text, source);
       }},
      {"run_table", [](const std::string& text,
                       const std::string& source) { validation::parse_run_table(text, source); }},
      {"dlrm_config",
       [](const std::string& text, const std::string& source) {
         generators::dlrm::parse_dlrm_config(text, source);
       }},
      {"calibration",
       [](const std::string& text, const std::string& source) {
         validation::parse_calibration(text, source);
       }},
  };
  return table;
}

struct Regression {
  std::string target;
  std::string path;
};

std::vector<Regression> regressions() {
  std::vector<Regression> found;
  const std::filesystem::path root =
      std::filesystem::path(PERFSIM_TEST_DATA_DIR) / "fuzz_regressions";
  for (const auto& folder : std::filesystem::directory_iterator(root)) {
    for (const auto& file : std::filesystem::directory_iterator(folder.path()))
      found.push_back({folder.path().filename().string(), file.path().string()});
  }
  std::sort(found.begin(), found.end(),
            [](const Regression& a, const Regression& b) { return a.path < b.path; });
  return found;
}

class FuzzRegression : public testing::TestWithParam<Regression> {};

TEST_P(FuzzRegression, IsLoadedOrRejectedWithAnInputErrorNamingTheFile) {
  const Regression& regression = GetParam();
  auto loader = loaders().find(regression.target);
  ASSERT_NE(loader, loaders().end()) << "no loader for folder " << regression.target;
  std::ifstream in(regression.path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  try {
    loader->second(text.str(), regression.path);
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), regression.path) << error.what();
  }
}

TEST(FuzzRegressions, EveryFuzzTargetHasALoaderHere) {
  // The corpus folders of tests/fuzz name the targets; each must be checkable here.
  const std::filesystem::path corpus =
      std::filesystem::path(PERFSIM_SOURCE_DIR) / "tests" / "fuzz" / "corpus";
  for (const auto& folder : std::filesystem::directory_iterator(corpus))
    EXPECT_TRUE(loaders().count(folder.path().filename().string())) << folder.path();
}

INSTANTIATE_TEST_SUITE_P(Corpus, FuzzRegression, testing::ValuesIn(regressions()),
                         [](const testing::TestParamInfo<Regression>& info) {
                           std::string name =
                               info.param.target + "_" +
                               std::filesystem::path(info.param.path).filename().string();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace perfsim
