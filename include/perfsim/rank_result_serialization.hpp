#pragma once
// cereal forms of the per-rank results, so processes can ship them to rank 0.
#include <cereal/types/array.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "perfsim/rank_result.hpp"

namespace perfsim {

template <class Archive>
void serialize(Archive& archive, StreamBreakdown& value) {
  archive(value.stream, value.busy_us, value.by_category_us);
}
template <class Archive>
void serialize(Archive& archive, GroupTraffic& value) {
  archive(value.collectives, value.bytes, value.time_us, value.exposed_us,
          value.exposed_before_start_us);
}
template <class Archive>
void serialize(Archive& archive, TimelineSlice& value) {
  archive(value.name, value.lane, value.start_us, value.duration_us, value.category,
          value.collective_key);
}
template <class Archive>
void serialize(Archive& archive, StepSpan& value) {
  archive(value.phase, value.micro_batch, value.chunk, value.start_us, value.end_us);
}
template <class Archive>
void serialize(Archive& archive, RankResult& value) {
  archive(value.sim_rank, value.iteration_us, value.cpu_us, value.kernel_time_us, value.gpu_busy_us,
          value.gpu_idle_us, value.by_category_us, value.streams, value.groups, value.ops,
          value.kernels, value.timeline, value.steps);
}

}  // namespace perfsim
