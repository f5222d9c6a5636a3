#pragma once
// The tables behind the summary, printed on request (`--detail ranks,groups,streams`): ranks
// collapsed into classes of identical results, process groups aggregated by kind, streams.
// Every row is in the results file too; these stay a screen long for any world size.
#include <cstddef>
#include <functional>
#include <span>
#include <string>

#include "perfsim/rank_result.hpp"
#include "report/group_kinds.hpp"

namespace perfsim::report {

// One row per class of identical ranks (rank_classes.hpp), in rank order; past `max_rows`
// classes the slowest are kept.
std::string format_rank_table(std::span<const RankResult> results, std::size_t max_rows = 24);

// One row per group kind: groups, collectives, bytes and time summed over ranks, exposed time
// per rank (mean and max) and the part of it before the collectives started.
std::string format_group_table(std::span<const RankResult> results, const GroupKindOf& kind_of);

using StreamLabelOf = std::function<std::string(StreamId)>;
// One row per stream id: busy time, mean and max over ranks.
std::string format_stream_table(std::span<const RankResult> results, const StreamLabelOf& label_of);

}  // namespace perfsim::report
