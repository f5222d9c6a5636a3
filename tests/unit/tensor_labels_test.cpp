// The builder renumbers the buffers by which an op waits for a collective so that repeated
// layers repeat their numbers (mpi_sim/engine/tensor_labels.hpp); these check that the labels
// keep exactly the waits the traversal makes on the trace's own tensor ids.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "mpi_sim/engine/tensor_labels.hpp"

namespace perfsim::engine {
namespace {

TEST(TensorLabels, OnlyTheFirstConsumptionAfterAProductionWaits) {
  TensorLabels labels;
  std::vector<std::int64_t> produced;
  EXPECT_FALSE(labels.consume(7, 0).has_value());  // nothing produced it: no wait
  labels.produce(7, 1, produced);
  EXPECT_EQ(labels.consume(7, 2), std::optional<std::int64_t>(0));
  EXPECT_FALSE(labels.consume(7, 3).has_value());  // the first consumer took it
  EXPECT_EQ(produced, std::vector<std::int64_t>{0});
}

TEST(TensorLabels, ProductionsInFlightTogetherGetDistinctLabels) {
  TensorLabels labels;
  std::vector<std::int64_t> first, second, third;
  labels.produce(100, 0, first);
  labels.produce(200, 1, second);
  EXPECT_EQ(labels.consume(100, 2), std::optional<std::int64_t>(0));
  EXPECT_EQ(labels.consume(200, 3), std::optional<std::int64_t>(1));  // overlapped 100's
  // Produced at op 3 after op 3 consumed label 1, and after label 0's consumer (op 2): free.
  labels.produce(300, 3, third);
  EXPECT_EQ(labels.consume(300, 4), std::optional<std::int64_t>(0));
  EXPECT_EQ(first, std::vector<std::int64_t>{0});
  EXPECT_EQ(second, std::vector<std::int64_t>{1});
  EXPECT_EQ(third, std::vector<std::int64_t>{0});
}

TEST(TensorLabels, ALaterProductionReplacesOneNobodyConsumed) {
  TensorLabels labels;
  std::vector<std::int64_t> early, late;
  labels.produce(5, 0, early);
  labels.produce(5, 2, late);
  EXPECT_EQ(labels.consume(5, 3), std::optional<std::int64_t>(0));
  EXPECT_TRUE(early.empty());  // the traversal's entry for it was replaced before any lookup
  EXPECT_EQ(late, std::vector<std::int64_t>{0});
}

TEST(TensorLabels, RepeatedLayersRepeatTheirLabels) {
  // Each "layer": two collectives whose buffers the next two ops consume, with fresh tensor
  // ids every layer as a generated trace has them.
  TensorLabels labels;
  std::vector<std::vector<std::int64_t>> produced(8);
  std::vector<std::vector<std::int64_t>> consumed;
  std::size_t op = 0;
  for (int layer = 0; layer < 4; ++layer) {
    const std::int64_t a = 1000 + 2 * layer, b = a + 1;
    labels.produce(a, op++, produced[2 * layer]);
    labels.produce(b, op++, produced[2 * layer + 1]);
    consumed.push_back({*labels.consume(a, op++), *labels.consume(b, op++)});
  }
  for (int layer = 1; layer < 4; ++layer) {
    EXPECT_EQ(consumed[layer], consumed[0]) << layer;
    EXPECT_EQ(produced[2 * layer], produced[0]) << layer;
  }
  EXPECT_NE(consumed[0][0], consumed[0][1]);
}

}  // namespace
}  // namespace perfsim::engine
