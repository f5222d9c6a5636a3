#pragma once
// The order in which the parallel dimensions are laid over the ranks, as Megatron-Core reads its
// `order` string (parallel_state.RankGenerator): the leftmost dimension varies fastest, so with
// the default "tp-cp-ep-dp-pp" a tensor-parallel group is TP consecutive ranks (inside a node)
// and pipeline stages are outermost. Megatron's --use-tp-pp-dp-mapping is "tp-cp-ep-pp-dp":
// pipeline stages inside the node, data parallelism across nodes. A dimension left out of the
// string is appended at the end, which Megatron allows only for a dimension of size 1.
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::generators::llm {

enum class ParallelDimension { kTensor, kContext, kExpert, kData, kPipeline };
inline constexpr int kParallelDimensions = 5;

// Fastest-varying first.
using RankOrder = std::vector<ParallelDimension>;

// "tp", "cp", "ep", "dp", "pp".
std::string_view dimension_name(ParallelDimension dimension);

// Megatron-Core's default, tp-cp-ep-dp-pp.
RankOrder default_rank_order();

// "tp-pp-dp", "tp-cp-ep-pp-dp", ...: distinct names of the five dimensions joined by '-'.
// Throws InputError(flag, text, problem) otherwise.
RankOrder parse_rank_order(std::string_view text, const std::string& flag);

// The dimensions joined by '-', as parse_rank_order reads them.
std::string rank_order_name(const RankOrder& order);

}  // namespace perfsim::generators::llm
