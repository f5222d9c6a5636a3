// Tensor lifetimes and their replay on a hand-built trace (tensor_lifetimes.hpp,
// trace_memory.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "memory/caching_allocator.hpp"
#include "memory/memory_timeline_table.hpp"
#include "memory/tensor_lifetimes.hpp"
#include "memory/trace_memory.hpp"
#include "perfsim/error.hpp"

namespace perfsim::memory {
namespace {

constexpr Bytes MiB = 1024 * 1024;

TensorRef gpu(std::int64_t storage, std::int64_t numel, std::int64_t offset = 0) {
  TensorRef ref;
  ref.tensor_id = storage * 10;
  ref.storage_id = storage;
  ref.offset_elements = offset;
  ref.numel = numel;
  ref.element_bytes = 4;
  ref.device = "cuda:0";
  return ref;
}

Op op(std::int64_t id, std::string name, std::vector<TensorRef> inputs,
      std::vector<TensorRef> outputs, std::int64_t parent = kNoParent) {
  Op result;
  result.id = id;
  result.name = std::move(name);
  result.parent_id = parent;
  result.inputs = std::move(inputs);
  result.outputs = std::move(outputs);
  return result;
}

// A weight (storage 1, 8 MiB, made before the trace), two forward layers whose outputs are
// kept for backward, a temporary inside one op, a backward op that frees them, and an
// optimizer step. Storage 3 is freed and its id reused by a later, unrelated tensor.
Trace small_training_step() {
  const std::int64_t MiB_floats = MiB / 4;
  Trace trace;
  trace.source = "<hand-built>";
  trace.ops.push_back(op(1, "aten::linear", {gpu(1, 8 * MiB_floats)}, {gpu(2, 16 * MiB_floats)}));
  trace.ops.push_back(op(2, "aten::addmm", {gpu(1, 8 * MiB_floats)}, {gpu(2, 16 * MiB_floats)}, 1));
  trace.ops.push_back(op(3, "aten::relu", {gpu(2, 16 * MiB_floats)}, {gpu(3, 16 * MiB_floats)}));
  // A temporary made and consumed inside one top-level op.
  trace.ops.push_back(op(4, "aten::softmax", {gpu(3, 16 * MiB_floats)}, {}));
  trace.ops.push_back(op(5, "aten::empty", {}, {gpu(4, 64 * MiB_floats)}, 4));
  trace.ops.push_back(op(6, "aten::_softmax", {gpu(4, 64 * MiB_floats)}, {}, 4));
  trace.ops.push_back(
      op(7, "ReluBackward0", {gpu(3, 16 * MiB_floats), gpu(2, 16 * MiB_floats)}, {}));
  // Storage id 3 again, at offset 0, not read by the op: a new allocation.
  trace.ops.push_back(op(8, "AddmmBackward0", {}, {gpu(3, 8 * MiB_floats)}));
  trace.ops.push_back(op(9, "Optimizer.step#SGD.step", {}, {}));
  trace.ops[8].is_annotation = true;
  trace.ops.push_back(op(10, "aten::add_", {gpu(1, 8 * MiB_floats), gpu(3, 8 * MiB_floats)},
                         {gpu(1, 8 * MiB_floats)}, 9));
  return trace;
}

TEST(TensorLifetimes, SplitsReusedStorageIdsAndNestedOutputs) {
  const Trace trace = small_training_step();
  const TraceLifetimes lifetimes = infer_tensor_lifetimes(trace);
  EXPECT_EQ(lifetimes.device, "cuda:0");
  // Storage 1 (weight), 2 (linear output, listed by linear and by its child addmm: one
  // tensor), 3 (relu output), 4 (temporary), 3 again (the weight gradient).
  ASSERT_EQ(lifetimes.tensors.size(), 5u);
  const TensorLifetime& weight = lifetimes.tensors[0];
  EXPECT_TRUE(weight.made_before_trace);
  EXPECT_EQ(weight.bytes, 8 * MiB);
  EXPECT_EQ(weight.first_position, 0u);
  EXPECT_EQ(weight.last_position, trace.ops.size() - 1);
  EXPECT_EQ(weight.category, MemoryCategory::kParameters);

  const TensorLifetime& linear_out = lifetimes.tensors[1];
  EXPECT_EQ(linear_out.storage_id, 2);
  EXPECT_EQ(linear_out.first_position, 0u);
  EXPECT_EQ(linear_out.last_position, 6u);
  EXPECT_EQ(linear_out.category, MemoryCategory::kActivations);

  const TensorLifetime& temporary = lifetimes.tensors[3];
  EXPECT_EQ(temporary.storage_id, 4);
  EXPECT_EQ(temporary.bytes, 64 * MiB);
  EXPECT_EQ(temporary.category, MemoryCategory::kWorkspace);

  const TensorLifetime& gradient = lifetimes.tensors[4];
  EXPECT_EQ(gradient.storage_id, 3);
  EXPECT_EQ(gradient.bytes, 8 * MiB);
  EXPECT_EQ(gradient.first_position, 7u);
  EXPECT_EQ(gradient.last_position, 9u);
  EXPECT_EQ(gradient.category, MemoryCategory::kGradients);  // made in backward, read by step
  EXPECT_EQ(lifetimes.tensors[2].last_position, 6u);  // the relu output died before the reuse
}

TEST(TraceMemory, ReplaysLifetimesThroughTheAllocator) {
  const Trace trace = small_training_step();
  DeviceMemory device;
  device.capacity_bytes = 100 * MiB;
  device.context_bytes = 10 * MiB;
  const TraceMemoryReport report = trace_memory_report(trace, device);
  // Peak inside the softmax: weight 8 + linear out 16 + relu out 16 + temporary 64 MiB.
  EXPECT_EQ(report.peak_live_tensor_bytes, 104 * MiB);
  EXPECT_EQ(report.peak_allocated_bytes, 104 * MiB);
  EXPECT_EQ(report.peak_op_id, 5);
  EXPECT_EQ(report.peak_top_level_op_name, "aten::softmax");
  EXPECT_EQ(report.live_at_peak[MemoryCategory::kWorkspace], 64 * MiB);
  EXPECT_EQ(report.live_at_peak[MemoryCategory::kActivations], 32 * MiB);
  EXPECT_EQ(report.live_at_peak[MemoryCategory::kParameters], 8 * MiB);
  // Reserved: 8 MiB opens a 20 MiB segment (12 MiB left), each 16 MiB needs a new 20 MiB one,
  // 64 MiB its own: 124 MiB, the same as the emulator gives for that sequence.
  CachingAllocatorEmulator reference;
  auto w = reference.allocate(8 * MiB);
  auto a = reference.allocate(16 * MiB);
  auto r = reference.allocate(16 * MiB);
  auto t = reference.allocate(64 * MiB);
  ASSERT_TRUE(w && a && r && t);
  EXPECT_EQ(report.peak_reserved_bytes, reference.peak_reserved_bytes());
  EXPECT_EQ(report.peak_device_bytes, report.peak_reserved_bytes + 10 * MiB);
  EXPECT_FALSE(report.verdict.fits);  // 124 MiB + 10 MiB context > 100 MiB
  EXPECT_EQ(report.verdict.margin_bytes, 100 * MiB - report.peak_device_bytes);
  EXPECT_EQ(report.reused_storage_ids, 1u);  // storage 3

  // One timeline sample per op; its maxima are the peaks.
  ASSERT_EQ(report.timeline.size(), trace.ops.size());
  Bytes max_allocated = 0;
  for (const MemorySample& sample : report.timeline)
    max_allocated = std::max(max_allocated, sample.allocated_bytes);
  EXPECT_EQ(max_allocated, report.peak_allocated_bytes);
  EXPECT_EQ(report.timeline.back().reserved_bytes, report.peak_reserved_bytes);
}

TEST(TraceMemory, TimelineRoundTripsThroughHdf5) {
  const TraceMemoryReport report = trace_memory_report(small_training_step(), DeviceMemory{});
  const std::string path =
      (std::filesystem::temp_directory_path() / "perfsim_memory_timeline_test.h5").string();
  h5::write_table(path, "/memory_timeline", memory_timeline_table(report), true);
  const h5::ColumnTable table = h5::read_table(path, "/memory_timeline");
  std::filesystem::remove(path);
  ASSERT_EQ(table.rows(), report.timeline.size());
  EXPECT_EQ(table.integers("op_id").front(), 1);
  EXPECT_EQ(table.integers("allocated_bytes")[4], 104 * MiB);  // inside the softmax
  EXPECT_EQ(table.units.at("reserved_bytes"), "bytes");
}

TEST(TraceMemory, RejectsTracesWithoutGpuTensors) {
  Trace trace;
  trace.source = "cpu-only.json";
  trace.ops.push_back(op(1, "aten::add", {}, {}));
  EXPECT_THROW(trace_memory_report(trace, DeviceMemory{}), InputError);
}

}  // namespace
}  // namespace perfsim::memory

namespace perfsim::memory {
namespace {

Op with_phase(Op op, std::string phase) {
  op.attributes.push_back({"phase", std::move(phase)});
  return op;
}

// A generated trace: phases from the "phase" attribute, persistent storages declared by an
// annotation (memory_category.hpp), everything else made where it is first referenced.
TEST(TensorLifetimes, DeclaredTraceTakesPhasesAndPersistenceFromTheGenerator) {
  Trace trace;
  trace.source = "<generated>";
  // Forward reads the weight (1) and a stand-in (5) no op makes; the backward reads the saved
  // activation (2) through a view of its own tensor id; the optimizer updates Adam state (3)
  // in place and reads the gradient buffer (4).
  trace.ops.push_back(
      with_phase(op(1, "aten::mm", {gpu(1, 100), gpu(5, 10)}, {gpu(2, 50)}), "forward"));
  trace.ops.push_back(with_phase(op(2, "aten::mm", {gpu(2, 50)}, {gpu(6, 20)}), "forward"));
  TensorRef saved_view = gpu(2, 25);
  saved_view.tensor_id = 99;
  trace.ops.push_back(
      with_phase(op(3, "aten::mm", {saved_view, gpu(6, 20)}, {gpu(7, 30)}), "backward"));
  trace.ops.push_back(
      with_phase(op(4, "aten::lerp_", {gpu(3, 200), gpu(4, 100)}, {gpu(3, 200)}), "optimizer"));
  for (const auto& [category, storage] :
       {std::pair{"parameters", 1}, {"optimizer state", 3}, {"gradients", 4}}) {
    Op declaration = op(10 + storage, "## persistent ##", {gpu(storage, 1)}, {});
    declaration.is_annotation = true;
    declaration.attributes.push_back({std::string(kDeclaredCategoryAttribute), category});
    trace.ops.push_back(declaration);
  }
  const TraceLifetimes lifetimes = infer_tensor_lifetimes(trace);
  EXPECT_EQ(lifetimes.phase_by_position[2], TracePhase::kBackward);
  EXPECT_EQ(lifetimes.phase_by_position[3], TracePhase::kOptimizer);
  auto find = [&](std::int64_t storage) {
    return *std::find_if(lifetimes.tensors.begin(), lifetimes.tensors.end(),
                         [&](const TensorLifetime& t) { return t.storage_id == storage; });
  };
  const std::size_t last = trace.ops.size() - 1;
  for (const auto& [storage, category] : {std::pair{1, MemoryCategory::kParameters},
                                          {3, MemoryCategory::kOptimizerState},
                                          {4, MemoryCategory::kGradients}}) {
    const TensorLifetime tensor = find(storage);
    EXPECT_TRUE(tensor.made_before_trace) << storage;
    EXPECT_EQ(tensor.first_position, 0u) << storage;
    EXPECT_EQ(tensor.last_position, last) << storage;
    EXPECT_EQ(tensor.category, category) << storage;
  }
  // The saved activation lives to the backward that reads it; the stand-in only at its use.
  EXPECT_EQ(find(2).last_position, 2u);
  EXPECT_EQ(find(2).category, MemoryCategory::kActivations);
  EXPECT_FALSE(find(5).made_before_trace);
  EXPECT_EQ(find(5).first_position, 0u);
  EXPECT_EQ(find(5).last_position, 0u);
  EXPECT_EQ(find(5).category, MemoryCategory::kWorkspace);
  // A declaration naming no category is an input error.
  trace.ops.back().attributes.back().value = std::string("weights");
  EXPECT_THROW(infer_tensor_lifetimes(trace), InputError);
}

}  // namespace
}  // namespace perfsim::memory
