// HostCostCache (mpi_sim/engine/host_cost_cache.hpp) gives HostOverheads' own means for every
// name, whether the name was seen before, is another view of the same text, or is a prefix view
// of a cached name's storage.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "mpi_sim/engine/host_cost_cache.hpp"

namespace perfsim::engine {
namespace {

HostOverheads overheads() {
  HostOverheads result;
  result.all_ops = {{1.0, 0, 10}, {2.0, 0, 10}, {3.0, 0, 10}, {5.0, 0, 10}};
  result.per_op["aten::mm"] = {{11.0, 0, 3}, {12.0, 0, 3}, {13.0, 0, 3}, {15.0, 0, 3}};
  // Seen, but without T2 samples: the pooled T2.
  result.per_op["aten::mm_backward"] = {{21.0, 0, 3}, {0, 0, 0}, {23.0, 0, 3}, {25.0, 0, 3}};
  result.t4_all = {4.0, 0, 10};
  result.t4_per_runtime["cudaLaunchKernel"] = {7.0, 0, 5};
  return result;
}

void expect_same(HostCostCache& cache, const HostOverheads& source, std::string_view name) {
  const OpHostCosts& costs = cache.op(name);
  EXPECT_EQ(costs.t1_us, source.t1_us(name)) << name;
  EXPECT_EQ(costs.t2_us, source.t2_us(name)) << name;
  EXPECT_EQ(costs.t3_us, source.t3_us(name)) << name;
  EXPECT_EQ(costs.t5_us, source.t5_us(name)) << name;
  EXPECT_EQ(cache.t4_us(name), source.t4_us(name)) << name;
}

TEST(HostCostCache, GivesTheOverheadsOwnMeansForEveryName) {
  const HostOverheads source = overheads();
  HostCostCache cache(source);
  const std::string backward = "aten::mm_backward";
  const std::string launch = "cudaLaunchKernel";
  const std::string other = "aten::add";
  for (int pass = 0; pass < 2; ++pass) {  // the second pass reads what the first cached
    expect_same(cache, source, backward);
    // A view of the first 8 characters of the same storage names another op.
    expect_same(cache, source, std::string_view(backward).substr(0, 8));
    expect_same(cache, source, launch);
    expect_same(cache, source, other);
  }
  EXPECT_EQ(cache.op(std::string_view(backward).substr(0, 8)).t1_us, 11.0);
  EXPECT_EQ(cache.op(backward).t2_us, 2.0);  // no T2 sample of its own
  EXPECT_EQ(cache.t4_us(launch), 7.0);
  // The same text at another address.
  const std::string copy = backward;
  EXPECT_EQ(cache.op(copy).t1_us, 21.0);
}

}  // namespace
}  // namespace perfsim::engine
