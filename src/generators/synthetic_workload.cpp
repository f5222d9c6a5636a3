#include "generators/synthetic_workload.hpp"

#include "perfsim/error.hpp"

namespace perfsim::generators {
namespace {

const char* kSource = "<synthetic workload>";

double bus_factor(CollectiveKind kind, int n) {
  const double ranks = n;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (ranks - 1) / ranks;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllv:
      return (ranks - 1) / ranks;
    default:
      return 1.0;
  }
}

std::string group_name(const SyntheticWorkload& workload, int rank) {
  switch (workload.layout) {
    case GroupLayout::kWorld:
      return "";
    case GroupLayout::kConsecutive:
      return "block/" + std::to_string(rank / workload.group_size);
    case GroupLayout::kStrided:
      return "stride/" + std::to_string(rank % (workload.ranks / workload.group_size));
  }
  return "";
}

}  // namespace

void validate(const SyntheticWorkload& workload) {
  if (workload.ranks < 1)
    throw InputError(kSource, "ranks", "must be at least 1");
  if (workload.repetitions < 1)
    throw InputError(kSource, "repetitions", "must be at least 1");
  if (workload.compute_us < 0)
    throw InputError(kSource, "compute_us", "must not be negative");
  if (workload.collective_bytes < 0)
    throw InputError(kSource, "bytes", "must not be negative");
  if (workload.bus_bandwidth_GBps <= 0) {
    throw InputError(kSource, "bus_bandwidth_GBps", "must be positive");
  }
  if (is_point_to_point(workload.collective)) {
    throw InputError(kSource, "collective", "send/recv is not a group collective");
  }
  if (workload.layout != GroupLayout::kWorld) {
    if (workload.group_size < 1 || workload.ranks % workload.group_size != 0) {
      throw InputError(kSource, "group_size",
                       "must divide the rank count (" + std::to_string(workload.ranks) + ")");
    }
  }
}

std::vector<int> synthetic_group_members(const SyntheticWorkload& workload, int rank) {
  std::vector<int> members;
  switch (workload.layout) {
    case GroupLayout::kWorld:
      for (int r = 0; r < workload.ranks; ++r)
        members.push_back(r);
      break;
    case GroupLayout::kConsecutive: {
      const int first = rank / workload.group_size * workload.group_size;
      for (int r = first; r < first + workload.group_size; ++r)
        members.push_back(r);
      break;
    }
    case GroupLayout::kStrided: {
      const int stride = workload.ranks / workload.group_size;
      for (int r = rank % stride; r < workload.ranks; r += stride)
        members.push_back(r);
      break;
    }
  }
  return members;
}

DurationUs synthetic_collective_us(const SyntheticWorkload& workload) {
  const int n = workload.layout == GroupLayout::kWorld ? workload.ranks : workload.group_size;
  const double bus_bytes =
      static_cast<double>(workload.collective_bytes) * bus_factor(workload.collective, n);
  return workload.collective_latency_us + transfer_time_us(bus_bytes, workload.bus_bandwidth_GBps);
}

Trace generate_synthetic_rank(const SyntheticWorkload& workload, int rank) {
  validate(workload);
  Trace trace;
  trace.source = kSource;
  trace.format = "synthetic";
  trace.rank = rank;
  trace.world_size = workload.ranks;
  const std::string group = group_name(workload, rank);
  if (!group.empty()) {
    trace.process_groups.push_back({group, synthetic_group_members(workload, rank), "synthetic"});
  }
  const DurationUs collective_us = synthetic_collective_us(workload);
  std::int64_t next_id = 1;
  for (int repetition = 0; repetition < workload.repetitions; ++repetition) {
    const std::int64_t buffer_id = 1'000'000 + repetition;
    Op compute;
    compute.id = next_id++;
    compute.name = "synthetic::compute";
    Kernel kernel;
    kernel.name = "synthetic_compute_kernel";
    kernel.category = KernelCategory::kGemm;
    kernel.stream = kDefaultComputeStream;
    kernel.measured_duration_us = workload.compute_us;
    kernel.launch_api = "cudaLaunchKernel";
    compute.kernels.push_back(kernel);
    if (workload.wait_after_collective && repetition > 0) {
      TensorRef consumed;
      consumed.tensor_id = buffer_id - 1;  // the previous collective's result
      compute.inputs.push_back(consumed);
    }
    trace.ops.push_back(std::move(compute));

    Op collective;
    collective.id = next_id++;
    collective.name = "c10d::" + std::string(collective_name(workload.collective));
    CommInfo comm;
    comm.kind = workload.collective;
    comm.process_group = group;
    comm.group_size = workload.layout == GroupLayout::kWorld ? workload.ranks : workload.group_size;
    comm.bytes_in = workload.collective_bytes;
    comm.bytes_out = workload.collective_bytes;
    comm.dtype = DType::kBFloat16;
    collective.comm = comm;
    TensorRef buffer;
    buffer.tensor_id = buffer_id;
    buffer.numel = workload.collective_bytes / 2;
    buffer.element_bytes = 2;
    buffer.dtype = DType::kBFloat16;
    collective.outputs.push_back(buffer);
    Kernel comm_kernel;
    comm_kernel.name = "ncclKernel_synthetic";
    comm_kernel.category = KernelCategory::kCommunication;
    comm_kernel.stream = kDefaultCommStream;
    comm_kernel.measured_duration_us = collective_us;
    comm_kernel.launch_api = "cudaLaunchKernel";
    collective.kernels.push_back(comm_kernel);
    trace.ops.push_back(std::move(collective));
  }
  trace.reindex();
  return trace;
}

}  // namespace perfsim::generators
