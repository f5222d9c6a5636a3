#pragma once
// The trace model: what one rank executed in one iteration. Loaders (execution trace, Kineto,
// generators) produce it; the engine consumes it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "perfsim/comm.hpp"
#include "perfsim/tensor.hpp"
#include "perfsim/units.hpp"

namespace perfsim {

using StreamId = std::int64_t;
inline constexpr StreamId kDefaultComputeStream = 7;  // PyTorch's default stream id in Kineto
inline constexpr StreamId kDefaultCommStream = 24;    // first NCCL stream seen in Kineto traces
inline constexpr std::int64_t kNoParent = -1;

// The breakdown categories of seed 001 Fig. 2.
enum class KernelCategory : std::uint8_t {
  kEmbeddingLookup,
  kGemm,
  kMemory,  // copy, concat, transpose, memset, memcpy
  kOther,
  kCommunication,
};
std::string_view kernel_category_name(KernelCategory category);
KernelCategory classify_kernel(std::string_view kernel_name);

// A runtime call during which the host waits for the device (cudaStreamSynchronize,
// cudaDeviceSynchronize, cudaEventSynchronize).
bool is_blocking_runtime_call(std::string_view call_name);
// Execution traces carry no runtime calls: perfsim's ET writer records an op's blocking call
// (a generated torch.cuda.synchronize, a batch load's host copy) as this node attribute, and
// the ET reader turns it back into the call.
inline constexpr std::string_view kHostSyncAttribute = "perfsim_host_sync";

// A GPU activity an op launched (kernel, memcpy, memset).
struct Kernel {
  std::string name;
  StreamId stream = kDefaultComputeStream;
  KernelCategory category = KernelCategory::kOther;
  std::int64_t correlation_id = -1;
  std::optional<DurationUs> measured_duration_us;
  std::optional<TimestampUs> measured_start_us;  // absolute, as recorded
  // The runtime call that launched it (cudaLaunchKernel, cudaMemcpyAsync, ...).
  std::string launch_api;
  std::optional<DurationUs> measured_launch_us;  // T4 as recorded

  // A copy into pageable host memory, or any copy issued by the synchronous cudaMemcpy: its
  // launch call returns only when the copy is done.
  bool blocks_host() const {
    return (name.find("DtoH") != std::string::npos && name.find("Pageable") != std::string::npos) ||
           launch_api == "cudaMemcpy";
  }
};

// A CUDA runtime (or driver) call recorded on the host: a launch (its Kernel carries the same
// correlation_id) or a call that launches nothing (cudaStreamWaitEvent, cudaStreamSynchronize,
// cudaEventQuery, ...).
struct RuntimeCall {
  std::string name;
  TimestampUs start_us = 0;
  DurationUs duration_us = 0;
  std::int64_t correlation_id = -1;
};

struct Attribute {
  std::string name;
  std::variant<std::int64_t, double, std::string> value;
};

struct Op {
  std::int64_t id = 0;
  std::string name;
  std::int64_t parent_id = kNoParent;
  std::vector<std::int64_t> child_ids;  // in execution order
  std::int64_t thread_id = 0;
  bool is_annotation = false;  // user annotation / profiler step / thread root: no work itself
  std::vector<TensorRef> inputs;
  std::vector<TensorRef> outputs;
  std::vector<Attribute> attributes;
  std::optional<CommInfo> comm;  // set on the op that owns the communication kernel
  // GPU activities launched directly by this op (not by its children), in launch order.
  std::vector<Kernel> kernels;
  // Runtime calls issued directly by this op (not by its children), in call order; launches
  // included (a Kernel's correlation_id names its call). Empty when the source has none (ET).
  std::vector<RuntimeCall> runtime_calls;
  std::optional<TimestampUs> measured_start_us;
  std::optional<DurationUs> measured_duration_us;

  const Attribute* find_attribute(std::string_view attr_name) const;
};

// The measured iteration window, when the source recorded one (Kineto ProfilerStep).
struct MeasuredStep {
  std::string name;
  TimestampUs start_us = 0;
  DurationUs duration_us = 0;
};

struct Trace {
  std::string source;  // file path, and "path:member" inside an archive
  std::string format;  // "pytorch-et/1.0.1", "pytorch-et/1.1.0-chakra.0.0.4", "kineto", ...
  int rank = 0;
  int world_size = 1;
  std::vector<Op> ops;  // in execution order (ET: by node id; Kineto: by start time)
  std::vector<ProcessGroup> process_groups;
  std::optional<MeasuredStep> measured_step;
  std::string device_name;  // when recorded (Kineto deviceProperties)
  // GPU activities whose launching call is not in the trace (Kineto: queued before profiling
  // began). They ran on the device but belong to no op; the engine does not walk them.
  std::vector<Kernel> unattributed_kernels;

  // Position of op `id` in ops, or -1. The id index is rebuilt when ops changed size; call
  // reindex() after editing ids in place. Not safe to call concurrently on one Trace.
  std::ptrdiff_t position_of(std::int64_t id) const;
  const Op* find(std::int64_t id) const;
  void reindex() const;

  // Ops that do work and have no working ancestor (ancestors are annotations or absent), in
  // execution order: the ops the simulator walks (seed 000 Algorithm 3, "top-level op").
  std::vector<std::size_t> top_level_positions() const;
  // Every kernel launched by an op or its descendants, in launch order.
  std::vector<const Kernel*> kernels_under(std::size_t position) const;

 private:
  mutable std::unordered_map<std::int64_t, std::size_t> index_;
};

}  // namespace perfsim
