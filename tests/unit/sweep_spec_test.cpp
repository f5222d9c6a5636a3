// Sweep files: expansion into numbered tasks (src/sweep/sweep_spec.hpp).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "perfsim/error.hpp"
#include "sweep/sweep_spec.hpp"

namespace perfsim::sweep {
namespace {

using Args = std::vector<std::string>;

TEST(SweepSpec, CartesianProductCountsAndNumbersLastParameterFastest) {
  const SweepSpec spec = parse_sweep(R"({
    "name": "grid",
    "base": {"ranks": 4, "repetitions": 2},
    "parameters": {"compute-us": [100, 200, 300], "group-layout": ["consecutive", "strided"]}
  })",
                                     "grid.json");
  ASSERT_EQ(spec.tasks.size(), 6u);
  EXPECT_EQ(spec.varied_keys, (Args{"compute-us", "group-layout"}));
  EXPECT_EQ(spec.tasks[0].simulate_arguments(),
            (Args{"--ranks", "4", "--repetitions", "2", "--compute-us", "100", "--group-layout",
                  "consecutive"}));
  EXPECT_EQ(spec.tasks[1].value_of("compute-us"), "100");
  EXPECT_EQ(spec.tasks[1].value_of("group-layout"), "strided");
  EXPECT_EQ(spec.tasks[2].value_of("compute-us"), "200");
  EXPECT_EQ(spec.tasks[5].value_of("compute-us"), "300");
  EXPECT_EQ(spec.tasks[5].value_of("group-layout"), "strided");
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(spec.tasks[i].index, i);
}

TEST(SweepSpec, CasesAreTheSlowestDigitAndOverrideTheBase) {
  const SweepSpec spec = parse_sweep(R"({
    "base": {"model": "m.json", "tp": 1, "pp": 1, "sequence-parallel": true},
    "cases": [{"tp": 2}, {"pp": 2, "sequence-parallel": false}],
    "parameters": {"micro-batch": [1, 2, 4]}
  })",
                                     "cases.json");
  ASSERT_EQ(spec.tasks.size(), 6u);
  EXPECT_EQ(spec.varied_keys, (Args{"tp", "pp", "sequence-parallel", "micro-batch"}));
  EXPECT_EQ(spec.tasks[2].simulate_arguments(),
            (Args{"--model", "m.json", "--tp", "2", "--pp", "1", "--sequence-parallel",
                  "--micro-batch", "4"}));
  // Task 3: the second case, first micro-batch; false leaves the flag out.
  EXPECT_EQ(spec.tasks[3].simulate_arguments(),
            (Args{"--model", "m.json", "--tp", "1", "--pp", "2", "--micro-batch", "1"}));
  EXPECT_EQ(spec.tasks[3].value_of("sequence-parallel"), "false");
  EXPECT_EQ(spec.tasks[0].simulated_ranks, 2);
  EXPECT_EQ(spec.tasks[3].simulated_ranks, 2);
}

TEST(SweepSpec, NumberingIsStableAcrossParsesAndKeepsFileOrder) {
  const char* text = R"({"parameters": {"z": [1, 2], "a": ["x", "y", "w"]}})";
  const SweepSpec first = parse_sweep(text, "s.json");
  const SweepSpec second = parse_sweep(text, "s.json");
  ASSERT_EQ(first.tasks.size(), 6u);
  for (std::size_t i = 0; i < first.tasks.size(); ++i)
    EXPECT_EQ(first.tasks[i].simulate_arguments(), second.tasks[i].simulate_arguments());
  // File order, not alphabetical: "z" is the slow digit.
  EXPECT_EQ(first.tasks[3].simulate_arguments(), (Args{"--z", "2", "--a", "x"}));
}

TEST(SweepSpec, ValuesBecomeArgumentsAndMpiProcessesComeFromTheScenario) {
  const SweepSpec spec = parse_sweep(R"({
    "max_processes_per_task": 4,
    "base": {"--kineto": ["a.json", "b.json"], "bytes": 1.5e6},
    "cases": [{"ranks": 8}, {"ranks": 2}, {"mpi_processes": 3, "ranks": 16}, {"ranks": null}]
  })",
                                     "values.json");
  ASSERT_EQ(spec.tasks.size(), 4u);
  EXPECT_EQ(spec.tasks[0].simulate_arguments(),
            (Args{"--kineto", "a.json", "b.json", "--bytes", "1500000.0", "--ranks", "8"}));
  EXPECT_EQ(spec.tasks[0].simulated_ranks, 8);
  EXPECT_EQ(spec.tasks[0].mpi_processes, 4);  // capped
  EXPECT_EQ(spec.tasks[1].mpi_processes, 2);
  EXPECT_EQ(spec.tasks[2].mpi_processes, 3);  // explicit, and not a simulate argument
  EXPECT_EQ(spec.tasks[2].simulate_arguments().back(), "16");
  EXPECT_EQ(spec.tasks[3].simulated_ranks, 0);  // unknown: one process
  EXPECT_EQ(spec.tasks[3].mpi_processes, 1);
  EXPECT_EQ(spec.name, "values");
  // Simulate's precedence: a generated model ignores the synthetic --ranks.
  EXPECT_EQ(parse_sweep(R"({"base": {"model": "m.json", "tp": 2, "dp": 3, "ranks": 8}})", "m.json")
                .tasks[0]
                .simulated_ranks,
            6);
  EXPECT_EQ(spec.directory, "sweep-values");
}

TEST(SweepSpec, DlrmTasksTakeTheirRanksFromTheConfigOrTheOverride) {
  const std::filesystem::path config =
      std::filesystem::temp_directory_path() / "perfsim-sweep-test-dlrm.json";
  std::ofstream(config) << R"({"name": "tiny", "ranks": 4})";
  const std::string text = R"({"base": {"dlrm": ")" + config.string() +
                           R"("}, "parameters": {"dlrm-ranks": [null, 2]}})";
  const SweepSpec spec = parse_sweep(text, "dlrm.json");
  std::filesystem::remove(config);
  ASSERT_EQ(spec.tasks.size(), 2u);
  EXPECT_EQ(spec.tasks[0].simulated_ranks, 4);
  EXPECT_EQ(spec.tasks[0].mpi_processes, 4);
  EXPECT_EQ(spec.tasks[1].simulated_ranks, 2);
  EXPECT_THROW(parse_sweep(R"({"base": {"dlrm": "/no/such/dlrm.json"}})", "d.json"), InputError);
}

void expect_input_error(const char* text, const std::string& location_part) {
  try {
    parse_sweep(text, "bad.json");
    ADD_FAILURE() << "no error for " << text;
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "bad.json");
    EXPECT_NE(std::string(error.what()).find(location_part), std::string::npos) << error.what();
  }
}

TEST(SweepSpec, BadFilesNameTheField) {
  expect_input_error(R"({"parameter": {}})", "/parameter");
  expect_input_error(R"({"parameters": {"tp": 2}})", "/parameters/tp");
  expect_input_error(R"({"parameters": {"tp": []}})", "/parameters/tp");
  expect_input_error(R"({"base": {"results": "x.h5"}})", "/base/results");
  expect_input_error(R"({"base": {"tp": {"a": 1}}})", "/base/tp");
  expect_input_error(R"({"cases": [{"ranks": 0}]})", "task 0: ranks");
  expect_input_error(R"({"base": {"ranks": 4}, "name": 3})", "/name");
  expect_input_error(R"({"base": )", "malformed JSON");
}

}  // namespace
}  // namespace perfsim::sweep
