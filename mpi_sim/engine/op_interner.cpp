#include "mpi_sim/engine/op_interner.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <optional>
#include <string_view>

namespace perfsim::engine {
namespace {

std::uint64_t bits_of(double value) {
  return std::bit_cast<std::uint64_t>(value);
}

bool same_double(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || bits_of(*a) == bits_of(*b));
}

bool same_kernel(const SimKernel& a, const SimKernel& b) {
  return a.name == b.name && a.stream == b.stream && a.category == b.category &&
         bits_of(a.duration_us) == bits_of(b.duration_us) && a.launch_api == b.launch_api &&
         a.is_collective == b.is_collective && a.host_waits == b.host_waits &&
         same_double(a.recorded_launch_offset_us, b.recorded_launch_offset_us) &&
         same_double(a.recorded_launch_us, b.recorded_launch_us);
}

// Both without a collective and a recorded host timing (the only ops shared).
bool same_body(const SimOp& a, const SimOp& b) {
  return a.collective_index == b.collective_index && a.name == b.name &&
         a.waits_for_communication == b.waits_for_communication &&
         a.waits_for_seq == b.waits_for_seq && a.host_sync == b.host_sync &&
         a.queued_before_trace == b.queued_before_trace &&
         a.continues_previous == b.continues_previous &&
         a.continued_by_next == b.continued_by_next &&
         bits_of(a.measured_start_us) == bits_of(b.measured_start_us) &&
         a.consumed_tensor_ids == b.consumed_tensor_ids &&
         std::equal(a.kernels.begin(), a.kernels.end(), b.kernels.begin(), b.kernels.end(),
                    same_kernel);
}

void mix(std::size_t& hash, std::size_t value) {
  hash ^= value + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
}

std::size_t hash_of(const SimOp& op) {
  std::size_t hash = std::hash<std::string_view>()(op.name);
  mix(hash, op.kernels.size());
  mix(hash, op.consumed_tensor_ids.size());
  mix(hash, bits_of(op.measured_start_us));
  mix(hash, op.waits_for_seq ? static_cast<std::size_t>(*op.waits_for_seq) : 0);
  for (const std::int64_t tensor : op.consumed_tensor_ids)
    mix(hash, static_cast<std::size_t>(tensor));
  for (const SimKernel& kernel : op.kernels) {
    mix(hash, std::hash<std::string_view>()(kernel.name));
    mix(hash, bits_of(kernel.duration_us));
  }
  return hash;
}

}  // namespace

void OpInterner::append(SimOpList& ops, const SimOp& op, std::size_t trace_position) {
  if (op.collective != nullptr || op.recorded_host != nullptr) {
    ops.push_back(op, trace_position);
    return;
  }
  std::vector<std::uint32_t>& candidates = bodies_by_hash_[hash_of(op)];
  for (const std::uint32_t body : candidates) {
    if (same_body(ops.body(body), op)) {
      ops.append(body, trace_position);
      return;
    }
  }
  const std::uint32_t body = ops.add_body(op);
  candidates.push_back(body);
  ops.append(body, trace_position);
}

void clear_keeping_capacity(SimOp& op) {
  std::vector<SimKernel> kernels = std::move(op.kernels);
  std::vector<std::int64_t> consumed = std::move(op.consumed_tensor_ids);
  kernels.clear();
  consumed.clear();
  op = SimOp{};
  op.kernels = std::move(kernels);
  op.consumed_tensor_ids = std::move(consumed);
}

}  // namespace perfsim::engine
