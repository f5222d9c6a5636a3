#pragma once
// Tensor lifetimes on one GPU from a trace's tensor references (seed 003 Sec. 3.2, Observation 1:
// the allocation and free requests decide the footprint; here they are inferred from which op
// first produces and last consumes each storage).
//
// Storage ids in PyTorch execution traces identify an allocation only while it lives: the
// profiler keys them on the storage's data pointer, so a freed block that the caching allocator
// hands out again shows up under the same id (the DLRM fixture reuses ids with other sizes).
// A storage id therefore has "incarnations". A new incarnation starts when an op outputs the
// storage at element offset 0, does not read the storage itself, and is not nested inside the
// op that started the current incarnation (a parent op lists the output its child makes).
// Outputs at other offsets, or of a storage the op also reads, are views or in-place writes.
//
// An incarnation first seen as an input was made before the trace began: it is live from the
// start, and to the end unless its id starts a new incarnation later (then to its last use).
// One first seen as an output is live from that op to its last reference, both included.
// Its size is the largest (offset + numel) x element size over its references.
//
// Categories (first rule that matches):
// 1. referenced under a zero_grad annotation                                 -> gradients
// 2. referenced by a communication op (CommInfo, c10d::*, nccl:*, record_param_comms)
//                                                                     -> communication buffers
// 3. an input of an AccumulateGrad op, or made in backward and read by the optimizer
//                                                                            -> gradients
// 4. made before the trace: passed as a fused optimizer's state argument (op_schema names it
//    momentum*, exp_avg*, ...; schema_arguments.hpp) -> optimizer state; referenced in the
//    forward phase -> parameters; else referenced in the optimizer phase -> optimizer state;
//    else -> other
// 5. made in the optimizer phase, or first and last referenced under the same top-level op
//                                                                                -> workspace
// 6. otherwise                                                                  -> activations
// Phases come from the op and its ancestors: a "phase" attribute where one is set (generated
// traces: "optimizer", "grad-clip", "param-gather" -> optimizer; "backward", "recompute",
// "grad-sync", "send-backward", "recv-backward" -> backward; others forward), else the names:
// "zero_grad"; "Optimizer.step" or "## optimizer"; "Backward", "autograd::engine" or
// "AccumulateGrad" (backward); else forward.
// Declared traces (memory_category.hpp, kDeclaredCategoryAttribute): a generator knows which
// storages persist across iterations and says so. Then the declared storages are made before
// the trace, live to its end, are never re-incarnated, and take the declared category; every
// other storage is made at its first reference, input or output (a generated operand that
// stands for a buffer no op of the trace makes, such as a received chunk, lives from its first
// use), and is workspace (rule 5) or activations. PyTorch traces declare nothing: the rules
// above apply unchanged.
// Known limits: gradients that DDP writes straight into its buckets count as communication
// buffers; input batches prefetched before the trace count as parameters; out= writes into an
// existing tensor at offset 0 by an op that does not list it as input split its lifetime.
#include <cstdint>
#include <string>
#include <vector>

#include "memory/memory_category.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::memory {

enum class TracePhase : std::uint8_t { kForward, kBackward, kOptimizer, kZeroGrad };
std::string_view trace_phase_name(TracePhase phase);

struct TensorLifetime {
  std::int64_t storage_id = -1;
  Bytes bytes = 0;
  std::size_t first_position = 0;  // index into Trace::ops
  std::size_t last_position = 0;   // inclusive
  bool made_before_trace = false;
  MemoryCategory category = MemoryCategory::kOther;
  std::size_t first_reference_position = 0;  // the op that made it, or first read it
};

struct TraceLifetimes {
  std::string device;  // "cuda:0"
  std::vector<TensorLifetime> tensors;
  std::vector<TracePhase> phase_by_position;  // one per Trace::ops entry
};

// The GPU device with the most tensor references ("cuda:N"); empty when the trace has none.
std::string busiest_gpu_device(const Trace& trace);

// Lifetimes of every storage on `device` (busiest_gpu_device when empty). Tensors with zero
// bytes are left out. Throws InputError when the trace references no GPU tensor at all.
TraceLifetimes infer_tensor_lifetimes(const Trace& trace, std::string device = {});

}  // namespace perfsim::memory
