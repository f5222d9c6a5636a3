#include "results/rank_list.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::results {
namespace {

int parse_rank(std::string_view text, std::string_view item, std::string_view option) {
  int rank = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), rank);
  if (error != std::errc() || end != text.data() + text.size() || text.empty() || rank < 0)
    throw InputError("", std::string(option),
                     "'" + std::string(item) + "' is not a rank or a range like 8-15");
  return rank;
}

}  // namespace

std::vector<int> parse_rank_list(std::string_view text, int world_size, std::string_view option) {
  std::vector<int> ranks;
  if (text == "all") {
    for (int rank = 0; rank < world_size; ++rank)
      ranks.push_back(rank);
    return ranks;
  }
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view item = text.substr(begin, comma - begin);
    const std::size_t dash = item.find('-');
    const int first = parse_rank(item.substr(0, dash), item, option);
    const int last =
        dash == std::string_view::npos ? first : parse_rank(item.substr(dash + 1), item, option);
    if (last < first)
      throw InputError("", std::string(option),
                       "range '" + std::string(item) + "' ends before it starts");
    if (last >= world_size)
      throw InputError("", std::string(option),
                       "rank " + std::to_string(last) + " is outside the " +
                           std::to_string(world_size) + " simulated ranks (0-" +
                           std::to_string(world_size - 1) + ")");
    for (int rank = first; rank <= last; ++rank)
      ranks.push_back(rank);
    begin = comma + 1;
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

}  // namespace perfsim::results
