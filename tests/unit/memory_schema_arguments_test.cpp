// Matching op_schema tensor arguments to a trace's input tensors (schema_arguments.hpp).
#include <gtest/gtest.h>

#include "memory/schema_arguments.hpp"

namespace perfsim::memory {
namespace {

// Shortened from the fbgemm lookup op of the DLRM fixture (its op_schema attribute).
constexpr const char* kLookup =
    "fbgemm::lookup(Tensor placeholder, Tensor dev_weights, int total_D, Tensor? indice_weights, "
    "Tensor(a!) lxu_cache_locations, float max_gradient, Tensor momentum1_dev, float eps=0., "
    "int[2] pads=[0, 0]) -> Tensor";

TEST(SchemaArguments, MatchesWhenOptionalsAreAllAbsentOrAllPresent) {
  EXPECT_EQ(tensor_argument_names(kLookup, 4),
            (std::vector<std::string>{"placeholder", "dev_weights", "lxu_cache_locations",
                                      "momentum1_dev"}));
  EXPECT_EQ(tensor_argument_names(kLookup, 5),
            (std::vector<std::string>{"placeholder", "dev_weights", "indice_weights",
                                      "lxu_cache_locations", "momentum1_dev"}));
}

TEST(SchemaArguments, RefusesWhatItCannotMatch) {
  EXPECT_TRUE(tensor_argument_names(kLookup, 3).empty());
  EXPECT_TRUE(
      tensor_argument_names("aten::_foreach_add_(Tensor(a!)[] self, Tensor[] other)", 4).empty());
  EXPECT_TRUE(tensor_argument_names("not a schema", 1).empty());
}

TEST(SchemaArguments, RecognisesOptimizerStateNames) {
  EXPECT_TRUE(is_optimizer_state_argument("momentum1_dev"));
  EXPECT_TRUE(is_optimizer_state_argument("exp_avg_sq"));
  EXPECT_FALSE(is_optimizer_state_argument("dev_weights"));
}

}  // namespace
}  // namespace perfsim::memory
