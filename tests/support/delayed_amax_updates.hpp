#pragma once
// The ops FP8 delayed scaling's amax history updates add to a generated trace (the generator's
// reduce_delayed_amaxes: the concatenation of a region's amaxes, its all-reduce on the amax
// stream, the fused history and scale update), for tests that compare a delayed-scaling trace
// with another recipe's, which has none of them.
#include <cstdint>
#include <set>
#include <string_view>

#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::test_support {

// The ids of those ops in `trace`.
inline std::set<std::int64_t> delayed_amax_update_ops(const Trace& trace) {
  using generators::llm::kAmaxReductionStream;
  using generators::llm::kFp8AmaxScaleUpdateOpName;
  std::set<std::int64_t> updated_tensors;
  for (const Op& op : trace.ops)
    if (op.name == kFp8AmaxScaleUpdateOpName)
      updated_tensors.insert(op.inputs.at(0).tensor_id);
  std::set<std::int64_t> ids;
  for (const Op& op : trace.ops) {
    const bool update = op.name == kFp8AmaxScaleUpdateOpName;
    const bool reduction =
        op.comm && !op.kernels.empty() && op.kernels.front().stream == kAmaxReductionStream;
    const bool concatenation = op.name == std::string_view("aten::cat") && !op.outputs.empty() &&
                               updated_tensors.count(op.outputs.front().tensor_id) > 0;
    if (update || reduction || concatenation)
      ids.insert(op.id);
  }
  return ids;
}

}  // namespace perfsim::test_support
