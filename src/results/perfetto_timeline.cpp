#include "results/perfetto_timeline.hpp"

#include <set>

#include "io/atomic_file.hpp"
#include "results/trace_json.hpp"

namespace perfsim::results {
namespace {

// Thread ids: 0 is the CPU, streams follow in id order.
std::int64_t thread_of(std::int64_t lane) {
  return lane < 0 ? 0 : lane + 1;
}

std::string flow_event(const std::string& key, const char* phase, std::int64_t id, int pid,
                       std::int64_t tid, TimestampUs ts_us) {
  return "{\"name\":" + json_string(key) + ",\"cat\":\"collective\",\"ph\":\"" + phase +
         "\",\"bp\":\"e\",\"id\":" + std::to_string(id) + ",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + json_us(ts_us) + "}";
}

// FNV-1a, 64 bits.
std::uint64_t key_hash(const std::string& key) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : key) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace

ChromeTimelineStream::ChromeTimelineStream(std::ostream& out) : out_(out) {
  out_ << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
}

void ChromeTimelineStream::emit(const std::string& event) {
  if (!first_event_)
    out_ << ",\n";
  out_ << event;
  first_event_ = false;
}

void ChromeTimelineStream::add_rank(const RankResult& result) {
  const int pid = result.sim_rank;
  const std::string pid_text = std::to_string(pid);
  emit("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid_text + ",\"tid\":0" +
       ",\"args\":{\"name\":\"rank " + pid_text + "\"}}");
  emit("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid_text + ",\"tid\":0" +
       ",\"args\":{\"sort_index\":" + pid_text + "}}");
  std::set<std::int64_t> lanes{-1};
  for (const TimelineSlice& slice : result.timeline)
    lanes.insert(slice.lane);
  for (std::int64_t lane : lanes) {
    const std::string name = lane < 0 ? "CPU" : "stream " + std::to_string(lane);
    emit("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid_text + ",\"tid\":" +
         std::to_string(thread_of(lane)) + ",\"args\":{\"name\":" + json_string(name) + "}}");
  }
  for (const TimelineSlice& slice : result.timeline) {
    const std::int64_t tid = thread_of(slice.lane);
    emit("{\"name\":" + json_string(slice.name) + ",\"cat\":\"" +
         std::string(kernel_category_name(slice.category)) + "\",\"ph\":\"X\",\"pid\":" + pid_text +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + json_us(slice.start_us) +
         ",\"dur\":" + json_us(slice.duration_us) + "}");
    if (slice.collective_key.empty())
      continue;
    // One arrow per pair of consecutive members: only the previous member must be remembered.
    const FlowEnd here{pid, static_cast<std::int32_t>(tid), slice.start_us};
    auto [previous, first_member] = last_member_.try_emplace(key_hash(slice.collective_key), here);
    if (first_member)
      continue;
    ++flows_;
    const FlowEnd& from = previous->second;
    emit(flow_event(slice.collective_key, "s", flows_, from.pid, from.tid, from.ts_us));
    emit(flow_event(slice.collective_key, "f", flows_, here.pid, here.tid, here.ts_us));
    previous->second = here;
  }
}

void ChromeTimelineStream::finish() {
  out_ << "\n]}\n";
}

void write_perfetto_timeline(const std::string& file_path, std::span<const RankResult> results) {
  io::write_file_atomically(file_path, [&](std::ostream& out) {
    ChromeTimelineStream stream(out);
    for (const RankResult& result : results)
      stream.add_rank(result);
    stream.finish();
  });
}

}  // namespace perfsim::results
