#include "results/timeline_writer.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "io/atomic_file.hpp"
#include "perfsim/error.hpp"
#include "results/kineto_timeline.hpp"
#include "results/perfetto_timeline.hpp"

namespace perfsim::results {

bool TimelineRequest::wants(int rank) const {
  return std::binary_search(ranks.begin(), ranks.end(), rank);
}

void check_timeline_writable(const TimelineRequest& request) {
  if (request.format != "kineto") {
    io::check_writable(request.path);
    return;
  }
  std::error_code error;
  std::filesystem::create_directories(request.path, error);
  if (error || !std::filesystem::is_directory(request.path))
    throw RuntimeFailure("cannot create the timeline directory " + request.path + ": " +
                         (error ? error.message() : "not a directory"));
  io::check_writable(kineto_trace_path(request.path, 0));
}

void write_timeline(const TimelineRequest& request, int world_size,
                    const std::function<void(const RankSink&)>& produce) {
  std::size_t written = 0;
  auto check_complete = [&] {
    if (written != request.ranks.size())
      throw RuntimeFailure("timeline " + request.path + ": " + std::to_string(written) + " of " +
                           std::to_string(request.ranks.size()) + " requested ranks arrived");
  };
  if (request.format == "kineto") {
    std::filesystem::create_directories(request.path);
    produce([&](const RankResult& result) {
      if (!request.wants(result.sim_rank))
        return;
      io::write_file_atomically(
          kineto_trace_path(request.path, result.sim_rank),
          [&](std::ostream& out) { write_kineto_trace(out, result, world_size); });
      ++written;
    });
    check_complete();
  } else {
    io::write_file_atomically(request.path, [&](std::ostream& out) {
      ChromeTimelineStream stream(out);
      produce([&](const RankResult& result) {
        if (!request.wants(result.sim_rank))
          return;
        stream.add_rank(result);
        ++written;
      });
      check_complete();  // before the rename: a partial file never replaces the target
      stream.finish();
    });
  }
}

}  // namespace perfsim::results
