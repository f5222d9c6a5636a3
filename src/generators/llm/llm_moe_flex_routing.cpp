#include "generators/llm/llm_moe_flex_routing.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

// C(m - s, k) / C(m, k): none of k draws without replacement from m lands on s marked items.
double none_drawn(int m, int s, int k) {
  double p = 1.0;
  for (int i = 0; i < k; ++i)
    p *= std::max(0.0, static_cast<double>(m - s - i) / static_cast<double>(m - i));
  return p;
}

}  // namespace

double expected_distinct_units(const UniformRouting& routing, int experts_per_unit) {
  const int experts = routing.experts, k = routing.top_k;
  if (experts_per_unit <= 0 || experts % experts_per_unit != 0)
    throw RuntimeFailure("expected_distinct_units: " + std::to_string(experts) +
                         " experts do not split into units of " + std::to_string(experts_per_unit));
  const bool grouped = routing.groups > 0 && routing.group_topk > 0;
  const int groups = grouped ? routing.groups : 1;
  const int chosen = grouped ? routing.group_topk : 1;
  if (experts % groups != 0 || chosen > groups)
    throw RuntimeFailure("expected_distinct_units: " + std::to_string(experts) + " experts in " +
                         std::to_string(groups) + " groups, " + std::to_string(chosen) + " chosen");
  const int per_group = experts / groups;
  const int drawn_from = chosen * per_group;
  if (k > drawn_from)
    throw RuntimeFailure("expected_distinct_units: top-" + std::to_string(k) + " of " +
                         std::to_string(drawn_from) + " experts");
  const int units = experts / experts_per_unit;
  double expected = 0.0;
  for (int unit = 0; unit < units; ++unit) {
    const int first = unit * experts_per_unit, last = first + experts_per_unit;
    // ways[j][s]: subsets of j of the groups seen so far whose share of the unit is s.
    std::vector<std::vector<double>> ways(chosen + 1,
                                          std::vector<double>(experts_per_unit + 1, 0.0));
    ways[0][0] = 1.0;
    for (int group = 0; group < groups; ++group) {
      const int begin = std::max(first, group * per_group);
      const int end = std::min(last, (group + 1) * per_group);
      const int share = std::max(0, end - begin);
      for (int j = chosen; j >= 1; --j)
        for (int s = experts_per_unit; s >= share; --s)
          ways[j][s] += ways[j - 1][s - share];
    }
    double subsets = 0.0, not_hit = 0.0;
    for (int s = 0; s <= experts_per_unit; ++s) {
      subsets += ways[chosen][s];
      not_hit += ways[chosen][s] * none_drawn(drawn_from, s, k);
    }
    expected += 1.0 - not_hit / subsets;
  }
  return expected;
}

}  // namespace perfsim::generators::llm
