// Sweep results: status from the task files, merging into one table with missing and failed
// tasks reported by index (src/sweep/task_files.hpp, src/sweep/sweep_merge.hpp).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "perfsim/error.hpp"
#include "results/results_file.hpp"
#include "sweep/sweep_merge.hpp"
#include "sweep/sweep_plan.hpp"
#include "sweep/table_text.hpp"
#include "sweep/task_files.hpp"

namespace perfsim::sweep {
namespace {

namespace fs = std::filesystem;

class SweepResults : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("perfsim-sweep-test-" + std::to_string(getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    spec_ = parse_sweep(R"({"base": {"ranks": 2}, "parameters": {"compute-us": [10, 20, 30, 40]}})",
                        "four.json");
    spec_.directory = directory_;
    fs::create_directories(directory_ / "results");
  }
  void TearDown() override { fs::remove_all(directory_); }

  // Two ranks; rank 1 is slower, waits longer for the "tp/0" group and has a second stream.
  void write_result(int task, double scale) {
    std::vector<RankResult> ranks(2);
    for (int r = 0; r < 2; ++r) {
      RankResult& result = ranks[r];
      result.sim_rank = r;
      result.iteration_us = scale * (100 + 50 * r);
      result.gpu_busy_us = scale * 80;
      result.gpu_idle_us = result.iteration_us - result.gpu_busy_us;
      result.by_category_us = {0, scale * 60, 0, 0, scale * 20};
      result.streams.push_back({0, scale * 60, {}});
      if (r == 1)
        result.streams.push_back({7, scale * 20, {}});
      result.groups["tp/0"] = {3, 1000, scale * 20, scale * 5 * (r + 1)};
      result.groups["dp/1"] = {1, 500, scale * 10, scale * 1};
      result.groups["p2p:" + std::to_string(r) + "->" + std::to_string(1 - r)] = {1, 8, 0, 0};
    }
    results::write_run_results(task_paths(directory_, task).partial.string(), kTaskRunName, ranks,
                               {});
    fs::rename(task_paths(directory_, task).partial, task_paths(directory_, task).result);
  }

  fs::path directory_;
  SweepSpec spec_;
};

double value_at(const h5::ColumnTable& table, const std::string& column, std::size_t row) {
  return table.doubles(column).at(row);
}

TEST_F(SweepResults, StatusCountsEachStateFromTheFiles) {
  write_result(0, 1.0);
  write_failure(task_paths(directory_, 1), {2, "mpirun -n 2 perfsim simulate", "boom\n"});
  write_running_marker(task_paths(directory_, 2));  // this live process: running
  std::ofstream(task_paths(directory_, 3).running) << "host: " << [] {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    return std::string(name);
  }() << "\npid: 999999999\n";  // a pid that cannot exist: lost
  const SweepProgress progress = sweep_progress(directory_, 4);
  EXPECT_EQ(progress.done, 1);
  EXPECT_EQ(progress.failed, 1);
  EXPECT_EQ(progress.running, 1);
  EXPECT_EQ(progress.lost, 1);
  EXPECT_EQ(progress.pending, 0);
  EXPECT_EQ(progress.failed_indices, (std::vector<int>{1, 3}));
  EXPECT_EQ(progress.missing_indices, (std::vector<int>{2}));
  EXPECT_EQ(sweep_progress(directory_, 6).pending, 2);
}

TEST_F(SweepResults, MergeReportsMissingAndFailedByIndexAndKeepsEveryRow) {
  write_result(0, 1.0);
  write_result(2, 2.0);
  write_failure(task_paths(directory_, 1),
                {2, "mpirun -n 2 perfsim simulate",
                 "line one\nperfsim: error: x.json: bad\nMPI_ABORT was invoked\n[vm:1] help\n"});
  const MergedSweep merged = merge_sweep(spec_);
  EXPECT_EQ(merged.missing_indices, (std::vector<int>{3}));
  EXPECT_EQ(merged.failed_indices, (std::vector<int>{1}));
  ASSERT_EQ(merged.failures.count(1), 1u);
  EXPECT_EQ(merged.failures.at(1).exit_status, 2);

  const h5::ColumnTable& table = merged.table;
  ASSERT_EQ(table.rows(), 4u);
  EXPECT_EQ(table.strings("state"),
            (std::vector<std::string>{"done", "failed", "done", "pending"}));
  EXPECT_EQ(table.doubles("compute-us"), (std::vector<double>{10, 20, 30, 40}));
  EXPECT_EQ(table.integers("mpi_processes"), (std::vector<std::int64_t>{2, 2, 2, 2}));
  // Iteration = the slowest rank; breakdowns are means over ranks.
  EXPECT_DOUBLE_EQ(value_at(table, "iteration_us", 0), 150);
  EXPECT_DOUBLE_EQ(value_at(table, "iteration_us", 2), 300);
  EXPECT_DOUBLE_EQ(value_at(table, "mean_iteration_us", 0), 125);
  EXPECT_DOUBLE_EQ(value_at(table, "slowest_rank", 0), 1);
  EXPECT_DOUBLE_EQ(value_at(table, "gemm_us", 2), 120);
  // Per rank: exposed tp 5 or 10, dp 1: the worst rank waited 11.
  EXPECT_DOUBLE_EQ(value_at(table, "exposed_comm_us", 0), 11);
  EXPECT_DOUBLE_EQ(value_at(table, "exposed_tp_us", 0), 10);
  EXPECT_DOUBLE_EQ(value_at(table, "exposed_dp_us", 2), 2);
  EXPECT_DOUBLE_EQ(value_at(table, "exposed_p2p_us", 2), 0);  // "p2p:0->1", "p2p:1->0": one kind
  EXPECT_DOUBLE_EQ(value_at(table, "comm_time_us", 0), 30);
  // Stream 7 exists on one rank of two: mean over ranks.
  EXPECT_DOUBLE_EQ(value_at(table, "stream7_busy_us", 0), 10);
  EXPECT_TRUE(std::isnan(value_at(table, "iteration_us", 1)));
  EXPECT_TRUE(std::isnan(value_at(table, "iteration_us", 3)));
  EXPECT_EQ(table.integers("exit_status")[1], 2);
  EXPECT_EQ(table.strings("error")[1], "perfsim: error: x.json: bad");

  write_merged(spec_, merged);
  const h5::ColumnTable read = h5::read_table((directory_ / "merged.h5").string(), kMergedGroup);
  EXPECT_EQ(read.column_order, table.column_order);
  EXPECT_EQ(read.doubles("exposed_comm_us")[2], 22);
  std::ifstream csv(directory_ / "merged.csv");
  std::string header, first;
  std::getline(csv, header);
  std::getline(csv, first);
  EXPECT_EQ(header.rfind("task,state,mpi_processes,simulated_ranks,compute-us,iteration_us", 0), 0u)
      << header;
  EXPECT_EQ(first.rfind("0,done,2,2,10,150,125,1,", 0), 0u) << first;
}

TEST_F(SweepResults, UnreadableResultsAreAFailedTaskNotAFailedMerge) {
  write_result(0, 1.0);
  std::ofstream(task_paths(directory_, 2).result) << "not hdf5";
  const MergedSweep merged = merge_sweep(spec_);
  EXPECT_EQ(merged.failed_indices, (std::vector<int>{2}));
  EXPECT_EQ(merged.missing_indices, (std::vector<int>{1, 3}));
  EXPECT_EQ(merged.table.strings("state")[2], "failed");
}

TEST_F(SweepResults, PlanTiesTheDirectoryToTheSweepFileText) {
  const fs::path file = directory_ / "grid.json";
  std::ofstream(file) << R"({"parameters": {"ranks": [1, 2]}})";
  const fs::path planned = directory_ / "planned";
  const SweepSpec spec = load_sweep(file, planned);
  EXPECT_EQ(write_plan(spec), planned / "sweep.json");
  EXPECT_NO_THROW(write_plan(spec));  // same text: nothing to do
  std::ifstream table(planned / "tasks.csv");
  std::string header;
  std::getline(table, header);
  EXPECT_EQ(header, "task,mpi_processes,simulated_ranks,ranks,simulate_arguments");

  fs::create_directories(planned / "results");
  std::ofstream(task_paths(planned, 0).result) << "x";
  std::ofstream(file) << R"({"parameters": {"ranks": [2, 1]}})";
  EXPECT_THROW(write_plan(load_sweep(file, planned)), InputError);
  fs::remove_all(planned / "results");
  EXPECT_NO_THROW(write_plan(load_sweep(file, planned)));  // no results yet: re-planned
  std::ifstream copy(planned / "sweep.json");
  std::string text;
  std::getline(copy, text);
  EXPECT_EQ(text, R"({"parameters": {"ranks": [2, 1]}})");
}

}  // namespace
}  // namespace perfsim::sweep
