#include "results/kineto_timeline.hpp"

#include <set>

#include "results/trace_json.hpp"

namespace perfsim::results {
namespace {

// Every rank's file describes one device, index 0 (the file is the rank; which GPU of its
// node it ran on is not simulated). The host process gets an id no device index reaches.
constexpr int kDevice = 0;
constexpr int kHostPidBase = 1000000;
constexpr int kHostThread = 1;

bool starts_with(const std::string& text, std::string_view prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// HTA's communication test (hta/utils/utils.py NCCL_KERNEL_RE).
bool named_like_nccl_kernel(const std::string& name) {
  return starts_with(name, "nccl") && name.find("Kernel") != std::string::npos;
}

std::string gpu_category(const std::string& name) {
  if (starts_with(name, "Memcpy"))
    return "gpu_memcpy";
  if (starts_with(name, "Memset"))
    return "gpu_memset";
  return "kernel";
}

}  // namespace

std::filesystem::path kineto_trace_path(const std::filesystem::path& directory, int rank) {
  return directory / ("rank-" + std::to_string(rank) + ".json");
}

std::string kineto_kernel_name(const TimelineSlice& slice) {
  if (slice.category == KernelCategory::kCommunication && !named_like_nccl_kernel(slice.name))
    return "ncclDevKernel_" + slice.name;
  return slice.name;
}

void write_kineto_trace(std::ostream& out, const RankResult& result, int world_size) {
  const std::string rank = std::to_string(result.sim_rank);
  const std::string host_pid = std::to_string(kHostPidBase + result.sim_rank);
  const std::string device = std::to_string(kDevice);
  out << "{\n  \"schemaVersion\": 1,\n"
      << "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " << rank
      << ", \"world_size\": " << world_size << "},\n"
      << "  \"deviceProperties\": [{\"id\": " << device
      << ", \"name\": \"perfsim simulated GPU\"}],\n"
      << "  \"traceName\": \"perfsim rank " << rank << "\",\n"
      << "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 0,\n"
      << "  \"traceEvents\": [\n";
  bool first = true;
  auto emit = [&](const std::string& event) {
    out << (first ? "  " : ",\n  ") << event;
    first = false;
  };
  emit("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + host_pid +
       ", \"tid\": 0, \"args\": {\"name\": \"perfsim rank " + rank + "\"}}");
  emit("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + device +
       ", \"tid\": 0, \"args\": {\"name\": \"GPU " + device + "\"}}");
  emit("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + host_pid +
       ", \"tid\": " + std::to_string(kHostThread) + ", \"args\": {\"name\": \"CPU\"}}");
  std::set<std::int64_t> streams;
  for (const TimelineSlice& slice : result.timeline) {
    if (slice.lane >= 0)
      streams.insert(slice.lane);
  }
  for (std::int64_t stream : streams) {
    emit("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + device +
         ", \"tid\": " + std::to_string(stream) + ", \"args\": {\"name\": \"stream " +
         std::to_string(stream) + "\"}}");
  }
  // The whole iteration is one profiler step, as HTA looks for ProfilerStep#N annotations.
  emit("{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#0\", \"pid\": " +
       host_pid + ", \"tid\": " + std::to_string(kHostThread) + ", \"ts\": " + json_us(0) +
       ", \"dur\": " + json_us(result.iteration_us) + ", \"args\": {\"External id\": 0}}");
  std::int64_t id = 0;
  for (const TimelineSlice& slice : result.timeline) {
    const std::string common =
        ", \"ts\": " + json_us(slice.start_us) + ", \"dur\": " + json_us(slice.duration_us);
    ++id;
    if (slice.lane < 0) {
      emit("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": " + json_string(slice.name) +
           ", \"pid\": " + host_pid + ", \"tid\": " + std::to_string(kHostThread) + common +
           ", \"args\": {\"External id\": " + std::to_string(id) + "}}");
      continue;
    }
    const std::string name = kineto_kernel_name(slice);
    const std::string stream = std::to_string(slice.lane);
    emit("{\"ph\": \"X\", \"cat\": \"" + gpu_category(name) + "\", \"name\": " + json_string(name) +
         ", \"pid\": " + device + ", \"tid\": " + stream + common + ", \"args\": {\"device\": " +
         device + ", \"stream\": " + stream + ", \"correlation\": " + std::to_string(id) +
         ", \"External id\": " + std::to_string(id) + "}}");
  }
  out << "\n  ]\n}\n";
}

}  // namespace perfsim::results
