#pragma once
// A Chrome/Perfetto trace (JSON "traceEvents", the Trace Event Format) of the simulated
// iteration: one process per rank, one thread for the CPU and one per stream, every op and
// kernel a complete ("X") slice, and each collective linked across its member ranks by flow
// arrows (rank to next member rank). Open in ui.perfetto.dev or chrome://tracing.
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <unordered_map>

#include "perfsim/rank_result.hpp"

namespace perfsim::results {

// Writes ranks as they come, so a run's timeline never has to be held whole: memory is one
// rank's slices plus, per collective, where its last member so far ran (for the next arrow),
// 40-odd bytes a collective keyed by a 64-bit hash of its key (a collision among 10^7
// collectives has odds near 10^-6 and would only misdraw one arrow).
class ChromeTimelineStream {
 public:
  explicit ChromeTimelineStream(std::ostream& out);
  void add_rank(const RankResult& result);
  void finish();

 private:
  struct FlowEnd {
    std::int32_t pid = 0;
    std::int32_t tid = 0;
    TimestampUs ts_us = 0;
  };
  void emit(const std::string& event);

  std::ostream& out_;
  bool first_event_ = true;
  std::unordered_map<std::uint64_t, FlowEnd> last_member_;  // by hash of the collective key
  std::int64_t flows_ = 0;
};

void write_perfetto_timeline(const std::string& file_path, std::span<const RankResult> results);

}  // namespace perfsim::results
