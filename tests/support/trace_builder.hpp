#pragma once
// Builds small hand-made traces for engine tests.
#include <optional>
#include <string>
#include <vector>

#include "perfsim/host_overheads.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::testing {

class TraceBuilder {
 public:
  explicit TraceBuilder(int rank = 0, int world_size = 1) {
    trace_.rank = rank;
    trace_.world_size = world_size;
    trace_.source = "<test rank " + std::to_string(rank) + ">";
  }

  // A top-level op with measured kernels of the given durations on `stream`.
  TraceBuilder& op(const std::string& name, std::vector<DurationUs> kernel_durations_us,
                   StreamId stream = kDefaultComputeStream,
                   std::vector<std::int64_t> consumes = {}) {
    Op& added = add(name);
    for (DurationUs duration : kernel_durations_us) {
      Kernel kernel;
      kernel.name = name + "_kernel";
      kernel.stream = stream;
      kernel.category = KernelCategory::kOther;
      kernel.measured_duration_us = duration;
      kernel.launch_api = "cudaLaunchKernel";
      added.kernels.push_back(kernel);
    }
    for (std::int64_t tensor : consumes) {
      TensorRef ref;
      ref.tensor_id = tensor;
      added.inputs.push_back(ref);
    }
    return *this;
  }

  // A top-level collective whose communication kernel took `measured_us` on this rank and
  // whose output buffer is tensor `produces`.
  TraceBuilder& collective(CollectiveKind kind, Bytes bytes, DurationUs measured_us,
                           std::int64_t produces = -1, const std::string& group = "",
                           StreamId stream = kDefaultCommStream) {
    Op& added = add(std::string("c10d::") + std::string(collective_name(kind)));
    CommInfo comm;
    comm.kind = kind;
    comm.bytes_in = bytes;
    comm.bytes_out = bytes;
    comm.process_group = group;
    added.comm = comm;
    if (produces >= 0) {
      TensorRef ref;
      ref.tensor_id = produces;
      added.outputs.push_back(ref);
    }
    Kernel kernel;
    kernel.name = "ncclKernel_" + std::string(collective_name(kind));
    kernel.stream = stream;
    kernel.category = KernelCategory::kCommunication;
    kernel.measured_duration_us = measured_us;
    kernel.launch_api = "cudaLaunchKernel";
    added.kernels.push_back(kernel);
    return *this;
  }

  TraceBuilder& wait(const std::string& name = "c10d::wait") {
    add(name);
    return *this;
  }

  TraceBuilder& group(const std::string& name, std::vector<int> ranks) {
    trace_.process_groups.push_back({name, std::move(ranks), ""});
    return *this;
  }

  Trace build() {
    trace_.reindex();
    return trace_;
  }

 private:
  Op& add(const std::string& name) {
    Op op;
    op.id = next_id_++;
    op.name = name;
    trace_.ops.push_back(op);
    return trace_.ops.back();
  }

  Trace trace_;
  std::int64_t next_id_ = 1;
};

// Overheads with every T zero, no kernel gap and launch at the call: clocks are pure kernel
// arithmetic.
inline HostOverheads zero_overheads() {
  HostOverheads overheads;
  overheads.launch.kernel_gap_us = 0;
  overheads.launch.launch_fraction_of_t4 = 0;
  return overheads;
}

}  // namespace perfsim::testing
