#include "generators/llm/llm_rank_order.hpp"

#include <algorithm>
#include <array>

#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

constexpr std::array<ParallelDimension, kParallelDimensions> kDimensions{
    ParallelDimension::kTensor, ParallelDimension::kContext, ParallelDimension::kExpert,
    ParallelDimension::kData, ParallelDimension::kPipeline};

}  // namespace

std::string_view dimension_name(ParallelDimension dimension) {
  switch (dimension) {
    case ParallelDimension::kTensor:
      return "tp";
    case ParallelDimension::kContext:
      return "cp";
    case ParallelDimension::kExpert:
      return "ep";
    case ParallelDimension::kData:
      return "dp";
    case ParallelDimension::kPipeline:
      return "pp";
  }
  return "tp";
}

RankOrder default_rank_order() {
  return {kDimensions.begin(), kDimensions.end()};
}

RankOrder parse_rank_order(std::string_view text, const std::string& flag) {
  auto fail = [&](const std::string& problem) {
    return InputError(flag, std::string(text),
                      problem +
                          " (an order is tp, cp, ep, dp and pp joined by '-', fastest "
                          "first, e.g. tp-cp-ep-dp-pp or tp-pp-dp)");
  };
  RankOrder order;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t dash = std::min(text.find('-', start), text.size());
    const std::string_view token = text.substr(start, dash - start);
    const auto dimension = std::find_if(kDimensions.begin(), kDimensions.end(),
                                        [&](auto d) { return dimension_name(d) == token; });
    if (dimension == kDimensions.end())
      throw fail("unknown dimension \"" + std::string(token) + "\"");
    if (std::find(order.begin(), order.end(), *dimension) != order.end())
      throw fail("\"" + std::string(token) + "\" appears twice");
    order.push_back(*dimension);
    start = dash + 1;
  }
  return order;
}

std::string rank_order_name(const RankOrder& order) {
  std::string name;
  for (ParallelDimension dimension : order) {
    if (!name.empty())
      name += '-';
    name += dimension_name(dimension);
  }
  return name;
}

}  // namespace perfsim::generators::llm
