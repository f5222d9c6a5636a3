#include "generators/llm/llm_trace_builder.hpp"

#include <algorithm>
#include <numeric>

#include "kernels/fp8_block_scaling.hpp"
#include "memory/memory_category.hpp"

namespace perfsim::generators::llm {
namespace {

std::int64_t product(const std::vector<std::int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1},
                         [](std::int64_t a, std::int64_t b) { return a * b; });
}

// NCCL kernel names as Kineto records them, so reports read like a profile.
std::string nccl_kernel_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "ncclDevKernel_AllReduce_Sum";
    case CollectiveKind::kAllGather:
      return "ncclDevKernel_AllGather";
    case CollectiveKind::kReduceScatter:
      return "ncclDevKernel_ReduceScatter_Sum";
    case CollectiveKind::kSend:
    case CollectiveKind::kRecv:
      return "ncclDevKernel_SendRecv";
    default:
      return "ncclDevKernel_" + std::string(collective_name(kind));
  }
}

}  // namespace

RankTraceBuilder::RankTraceBuilder(int rank, int world_size, DType activation_dtype)
    : dtype_(activation_dtype) {
  trace_.rank = rank;
  trace_.world_size = world_size;
  trace_.format = "perfsim-llm-generator/1";
}

TensorRef RankTraceBuilder::tensor(std::vector<std::int64_t> shape, DType dtype) {
  TensorRef ref;
  ref.tensor_id = next_tensor_id_++;
  ref.storage_id = ref.tensor_id;
  ref.numel = product(shape);
  ref.element_bytes = element_bytes(dtype);
  ref.device = "cuda:0";
  ref.dtype = dtype;
  ref.shape = std::move(shape);
  return ref;
}

TensorRef RankTraceBuilder::view(const TensorRef& tensor, std::vector<std::int64_t> shape) {
  TensorRef ref = tensor;
  ref.numel = product(shape);
  ref.shape = std::move(shape);
  return ref;
}

TensorRef RankTraceBuilder::alias(const TensorRef& storage, std::vector<std::int64_t> shape,
                                  DType dtype, std::int64_t offset_elements) {
  TensorRef ref = tensor(std::move(shape), dtype);
  ref.storage_id = storage.storage_id;
  const std::int64_t storage_bytes_before = storage.offset_elements * storage.element_bytes;
  ref.offset_elements = storage_bytes_before / ref.element_bytes + offset_elements;
  return ref;
}

void RankTraceBuilder::declare_persistent(std::string_view category,
                                          std::vector<TensorRef> tensors) {
  if (tensors.empty())
    return;
  Op op;
  op.id = next_op_id_++;
  op.name = "## persistent " + std::string(category) + " ##";
  op.is_annotation = true;
  op.inputs = std::move(tensors);
  op.attributes.push_back({std::string(memory::kDeclaredCategoryAttribute), std::string(category)});
  trace_.ops.push_back(std::move(op));
}

void RankTraceBuilder::set_context(std::string phase, int micro_batch, int layer) {
  phase_ = std::move(phase);
  micro_batch_ = micro_batch;
  layer_ = layer;
}

std::size_t RankTraceBuilder::context_attributes() const {
  return (phase_.empty() ? 0 : 1) + (micro_batch_ >= 0 ? 1 : 0) + (layer_ >= 0 ? 1 : 0);
}

void RankTraceBuilder::add_context(Op& op) const {
  if (!phase_.empty())
    op.attributes.push_back({"phase", phase_});
  if (micro_batch_ >= 0)
    op.attributes.push_back({"micro_batch", std::int64_t{micro_batch_}});
  if (layer_ >= 0)
    op.attributes.push_back({"layer", std::int64_t{layer_}});
}

void RankTraceBuilder::compute(std::string op_name, std::vector<TensorRef> inputs,
                               std::vector<TensorRef> outputs, KernelCategory category,
                               double flops) {
  Op op;
  op.id = next_op_id_++;
  op.name = std::move(op_name);
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  // Sized once: growing by doubling cost every op two or three blocks and moves.
  op.attributes.reserve(1 + (contention_sms_ > 0 ? 1 : 0) + (contention_hbm_GBps_ > 0 ? 1 : 0) +
                        context_attributes() + (fp8_block_scaling_ ? 1 : 0));
  op.attributes.push_back({"flops", flops});
  if (contention_sms_ > 0)
    op.attributes.push_back({"contention_sms", std::int64_t{contention_sms_}});
  if (contention_hbm_GBps_ > 0)
    op.attributes.push_back({"contention_hbm_GBps", contention_hbm_GBps_});
  add_context(op);
  if (fp8_block_scaling_ && category == KernelCategory::kGemm &&
      std::any_of(op.inputs.begin(), op.inputs.end(),
                  [](const TensorRef& input) { return input.dtype == DType::kFloat8; }))
    op.attributes.push_back({std::string(kFp8BlockScalingAttribute), std::int64_t{1}});
  Kernel kernel;
  kernel.name = op.name;
  kernel.category = category;
  kernel.stream = kDefaultComputeStream;
  kernel.launch_api = "cudaLaunchKernel";
  op.kernels.push_back(std::move(kernel));
  trace_.ops.push_back(std::move(op));
}

void RankTraceBuilder::synchronize_device() {
  Op op;
  op.id = next_op_id_++;
  op.name = "torch.cuda.synchronize";
  add_context(op);
  op.runtime_calls.push_back({"cudaDeviceSynchronize", 0.0, 0.0, -1});
  trace_.ops.push_back(std::move(op));
}

void RankTraceBuilder::load_batch(bool host_sync) {
  Op op;
  op.id = next_op_id_++;
  op.name = std::string(kLoadBatchOpName);
  add_context(op);
  if (host_sync)
    op.runtime_calls.push_back({"cudaStreamSynchronize", 0.0, 0.0, -1});
  trace_.ops.push_back(std::move(op));
}

void RankTraceBuilder::host_call(std::string op_name) {
  Op op;
  op.id = next_op_id_++;
  op.name = std::move(op_name);
  add_context(op);
  trace_.ops.push_back(std::move(op));
}

void RankTraceBuilder::wait_for_compute_stream(std::string op_name) {
  Op op;
  op.id = next_op_id_++;
  op.name = std::move(op_name);
  add_context(op);
  op.runtime_calls.push_back({"cudaEventSynchronize", 0.0, 0.0, -1});
  trace_.ops.push_back(std::move(op));
}

void RankTraceBuilder::communicate(const CollectiveSpec& spec, const TensorRef& input,
                                   const TensorRef& output) {
  Op op;
  op.id = next_op_id_++;
  op.name = "nccl:" + std::string(collective_name(spec.kind));
  CommInfo comm;
  comm.kind = spec.kind;
  comm.process_group = is_point_to_point(spec.kind) ? std::string() : spec.group;
  comm.group_size = is_point_to_point(spec.kind) ? 2 : spec.group_size;
  comm.dtype = input.dtype;
  comm.bytes_in = input.bytes();
  comm.bytes_out = output.bytes();
  comm.peer_rank = spec.peer_rank;
  comm.match_tag = spec.match_tag;
  const bool in_place =
      spec.kind == CollectiveKind::kAllReduce || spec.kind == CollectiveKind::kRecv;
  if (in_place || spec.kind == CollectiveKind::kSend) {
    op.inputs.push_back(input);  // a send produces nothing another op waits for
  } else {
    op.inputs.push_back(input);
    op.outputs.push_back(output);
  }
  op.comm = std::move(comm);
  op.attributes.reserve(context_attributes());
  add_context(op);
  Kernel kernel;
  kernel.name = nccl_kernel_name(spec.kind);
  kernel.category = KernelCategory::kCommunication;
  kernel.stream = spec.stream;
  kernel.launch_api = "cudaLaunchKernel";
  op.kernels.push_back(std::move(kernel));
  trace_.ops.push_back(std::move(op));
}

void RankTraceBuilder::stream_to(TraceSink& sink) {
  flush();
  sink_ = &sink;
  sink_->begin(trace_);
}

void RankTraceBuilder::flush() {
  if (sink_ == nullptr || trace_.ops.empty())
    return;
  const std::size_t count = trace_.ops.size();
  sink_->take(trace_.ops, flushed_ops_);
  flushed_ops_ += count;
  trace_.ops.clear();  // keeps its capacity for the next step's ops
}

Trace RankTraceBuilder::take() {
  trace_.reindex();
  return std::move(trace_);
}

}  // namespace perfsim::generators::llm
