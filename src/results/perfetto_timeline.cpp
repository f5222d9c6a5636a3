#include "results/perfetto_timeline.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "io/atomic_file.hpp"
#include "perfsim/error.hpp"

namespace perfsim::results {
namespace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", value);
  return buffer;
}

// Thread ids: 0 is the CPU, streams follow in id order.
std::int64_t thread_of(std::int64_t lane) {
  return lane < 0 ? 0 : lane + 1;
}

void write_timeline(std::ostream& out, std::span<const RankResult> results) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& event) {
    if (!first)
      out << ",\n";
    out << event;
    first = false;
  };
  // Flow ids: one per collective key, members in rank order.
  std::map<std::string, std::vector<std::pair<int, const TimelineSlice*>>> flows;
  for (const RankResult& result : results) {
    const int pid = result.sim_rank;
    emit("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         ",\"args\":{\"name\":\"rank " + std::to_string(pid) + "\"}}");
    emit("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         ",\"args\":{\"sort_index\":" + std::to_string(pid) + "}}");
    std::set<std::int64_t> lanes{-1};
    for (const TimelineSlice& slice : result.timeline)
      lanes.insert(slice.lane);
    for (std::int64_t lane : lanes) {
      const std::string name = lane < 0 ? "CPU" : "stream " + std::to_string(lane);
      emit("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
           std::to_string(thread_of(lane)) + ",\"args\":{\"name\":" + json_string(name) + "}}");
    }
    for (const TimelineSlice& slice : result.timeline) {
      emit("{\"name\":" + json_string(slice.name) + ",\"cat\":\"" +
           std::string(kernel_category_name(slice.category)) + "\",\"ph\":\"X\",\"pid\":" +
           std::to_string(pid) + ",\"tid\":" + std::to_string(thread_of(slice.lane)) +
           ",\"ts\":" + number(slice.start_us) + ",\"dur\":" + number(slice.duration_us) + "}");
      if (!slice.collective_key.empty())
        flows[slice.collective_key].emplace_back(pid, &slice);
    }
  }
  std::size_t flow_id = 0;
  for (const auto& [key, members] : flows) {
    ++flow_id;
    if (members.size() < 2)
      continue;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const auto& [pid, slice] = members[i];
      const char* phase = i == 0 ? "s" : (i + 1 == members.size() ? "f" : "t");
      emit("{\"name\":" + json_string(key) + ",\"cat\":\"collective\",\"ph\":\"" + phase +
           "\",\"bp\":\"e\",\"id\":" + std::to_string(flow_id) + ",\"pid\":" + std::to_string(pid) +
           ",\"tid\":" + std::to_string(thread_of(slice->lane)) +
           ",\"ts\":" + number(slice->start_us) + "}");
    }
  }
  out << "\n]}\n";
}

}  // namespace

void write_perfetto_timeline(const std::string& file_path, std::span<const RankResult> results) {
  io::write_file_atomically(file_path, [&](std::ostream& out) { write_timeline(out, results); });
}

}  // namespace perfsim::results
