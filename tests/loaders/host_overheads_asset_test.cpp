// Issue 20: mutated host-overhead assets crashed perfsim (cereal's type checks are assertions,
// compiled out in release builds). Every mutation is now loaded or rejected with an InputError
// naming the file and the field.
#include <gtest/gtest.h>

#include <string>

#include "overheads/overhead_asset.hpp"
#include "perfsim/error.hpp"

namespace perfsim::overheads {
namespace {

HostOverheads sample_overheads() {
  HostOverheads overheads;
  overheads.source_traces = 2;
  overheads.all_ops.t1 = {1.5, 0.5, 10};
  overheads.all_ops.t2 = {8.0, 2.0, 5};
  overheads.t4_all = {3.0, 1.0, 7};
  overheads.per_op["aten::mm"].t1 = {2.5, 0.25, 4};
  overheads.t4_per_runtime["cudaLaunchKernel"] = {3.25, 1.0, 6};
  return overheads;
}

std::string replaced(std::string json, const std::string& from, const std::string& to) {
  const auto at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    json.replace(at, from.size(), to);
  return json;
}

void expect_rejected(const std::string& json, const std::string& field,
                     const std::string& problem) {
  try {
    host_overheads_from_json(json, "overheads.json");
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "overheads.json");
    EXPECT_EQ(error.location(), field) << error.what();
    EXPECT_NE(error.problem().find(problem), std::string::npos) << error.what();
  }
}

const std::string kGood = host_overheads_to_json(sample_overheads());

TEST(HostOverheadAsset, StringWhereANumberBelongsIsAnError) {
  expect_rejected(replaced(kGood, "\"mean_us\": 1.5", "\"mean_us\": \"1.5\""),
                  "host_overheads.all_ops.t1.mean_us", "must be a number");
  expect_rejected(replaced(kGood, "\"count\": 10", "\"count\": \"ten\""),
                  "host_overheads.all_ops.t1.count", "must be an integer");
}

TEST(HostOverheadAsset, SwappedFieldsLoadTheSameFigures) {
  std::string swapped = replaced(kGood, "\"mean_us\": 1.5,\n                \"stddev_us\": 0.5,",
                                 "\"stddev_us\": 0.5,\n                \"mean_us\": 1.5,");
  ASSERT_NE(swapped, kGood);
  HostOverheads loaded = host_overheads_from_json(swapped, "overheads.json");
  EXPECT_EQ(loaded.all_ops.t1.mean_us, 1.5);
  EXPECT_EQ(loaded.all_ops.t1.stddev_us, 0.5);
  EXPECT_EQ(host_overheads_to_json(loaded), kGood);
}

TEST(HostOverheadAsset, SwappedValuesOfDifferentTypesAreErrors) {
  // The stats object where the bool belongs and the other way round.
  expect_rejected(replaced(kGood, "\"remove_iqr_outliers\": true", "\"remove_iqr_outliers\": 1.0"),
                  "host_overheads.launch.remove_iqr_outliers", "must be true or false");
  expect_rejected(replaced(kGood, "\"count\": 10", "\"count\": 1.5"),
                  "host_overheads.all_ops.t1.count", "must be an integer");
}

TEST(HostOverheadAsset, TinyValuesLoadAndHugeOnesAreErrors) {
  HostOverheads tiny =
      host_overheads_from_json(replaced(kGood, "\"mean_us\": 1.5", "\"mean_us\": 1e-300"), "o");
  EXPECT_EQ(tiny.all_ops.t1.mean_us, 1e-300);
  expect_rejected(replaced(kGood, "\"mean_us\": 1.5", "\"mean_us\": 1e308"),
                  "host_overheads.all_ops.t1.mean_us", "outside [0, ");
  expect_rejected(replaced(kGood, "\"mean_us\": 1.5", "\"mean_us\": -1.5"),
                  "host_overheads.all_ops.t1.mean_us", "outside [0, ");
  expect_rejected(replaced(kGood, "\"launch_fraction_of_t4\": 0.5", "\"launch_fraction_of_t4\": 2"),
                  "host_overheads.launch.launch_fraction_of_t4", "outside [0, 1]");
  expect_rejected(replaced(kGood, "\"count\": 10", "\"count\": 18446744073709551615"),
                  "host_overheads.all_ops.t1.count", "outside [0, ");
}

TEST(HostOverheadAsset, MissingOrMisplacedObjectsAreErrors) {
  expect_rejected(replaced(kGood, "\"t4_all\": {", "\"t4_all\": [], \"x\": {"),
                  "host_overheads.t4_all", "must be an object");
  expect_rejected(replaced(kGood, "\"per_op\": [", "\"per_op\": [7, "), "host_overheads.per_op[0]",
                  "must be an object");
  expect_rejected(R"({"host_overheads": 3})", "host_overheads", "must be an object");
}

}  // namespace
}  // namespace perfsim::overheads
