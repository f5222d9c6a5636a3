#include "mpi_sim/engine/op_interner.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace perfsim::engine {
namespace {

// A double compared and hashed by its bits: -0.0 and 0.0 differ, a NaN equals itself.
struct Bits {
  std::uint64_t value = 0;
  bool operator==(const Bits&) const = default;
};

Bits bits_of(double value) {
  return {std::bit_cast<std::uint64_t>(value)};
}

std::optional<Bits> bits_of(const std::optional<double>& value) {
  return value ? std::optional<Bits>(bits_of(*value)) : std::nullopt;
}

auto fields_of(const SimKernel& kernel);

// A vector's elements, equal element by element as fields_of says (or by == for integers).
template <class T>
struct Elements {
  std::span<const T> items;
  friend bool operator==(const Elements& a, const Elements& b) {
    return std::equal(a.items.begin(), a.items.end(), b.items.begin(), b.items.end(),
                      [](const T& x, const T& y) {
                        if constexpr (std::is_same_v<T, SimKernel>)
                          return fields_of(x) == fields_of(y);
                        else
                          return x == y;
                      });
  }
};

// Every member of SimKernel and of SimOp, as the traversal sees it (doubles by their bits).
// The structured bindings must name every member: adding one to SimKernel or SimOp stops this
// file compiling until it is listed here, and same_body and hash_of both derive from this list,
// so two ops that differ in the new member can never share a body.
auto fields_of(const SimKernel& kernel) {
  const auto& [name, stream, category, duration_us, launch_api, is_collective, host_waits,
               recorded_launch_offset_us, recorded_launch_us] = kernel;
  return std::tuple(name, stream, category, bits_of(duration_us), launch_api, is_collective,
                    host_waits, bits_of(recorded_launch_offset_us), bits_of(recorded_launch_us));
}

auto fields_of(const SimOp& op) {
  const auto& [collective_index, name, phase, kernels, collective, waits_for_communication,
               waits_for_seq, host_sync, queued_before_trace, continues_previous, continued_by_next,
               measured_start_us, consumed_tensor_ids, recorded_host] = op;
  // The pointers compare by address: only ops without either are shared (both null).
  return std::tuple(collective_index, name, phase, Elements<SimKernel>{kernels}, collective.get(),
                    waits_for_communication, waits_for_seq, host_sync, queued_before_trace,
                    continues_previous, continued_by_next, bits_of(measured_start_us),
                    Elements<std::int64_t>{consumed_tensor_ids}, recorded_host.get());
}

void mix(std::size_t& hash, std::size_t value) {
  hash ^= value + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
}

// The hash mixes the members of fields_of that tell ops apart (names, doubles, vectors) and
// leaves the flags, counts and pointers to equality: a hash need only agree with equality,
// and these few members keep the work per op low.
template <class T>
struct IsElements : std::false_type {};
template <class T>
struct IsElements<Elements<T>> : std::true_type {};
template <class T>
constexpr bool kHashed =
    std::is_same_v<T, std::string_view> || std::is_same_v<T, Bits> || IsElements<T>::value;

std::size_t hash_value(std::string_view text) {
  return std::hash<std::string_view>()(text);
}
std::size_t hash_value(Bits bits) {
  return static_cast<std::size_t>(bits.value);
}
std::size_t hash_value(std::int64_t value) {
  return static_cast<std::size_t>(value);
}
template <class... T>
std::size_t hash_value(const std::tuple<T...>& fields);
template <class T>
void mix_if_hashed(std::size_t& hash, const T& field) {
  if constexpr (kHashed<T>)
    mix(hash, hash_value(field));
}
template <class T>
std::size_t hash_value(const Elements<T>& elements) {
  std::size_t hash = elements.items.size();
  for (const T& item : elements.items) {
    if constexpr (std::is_same_v<T, SimKernel>)
      mix(hash, hash_value(fields_of(item)));
    else
      mix(hash, hash_value(item));
  }
  return hash;
}
template <class... T>
std::size_t hash_value(const std::tuple<T...>& fields) {
  std::size_t hash = 0;
  std::apply([&hash](const auto&... field) { (mix_if_hashed(hash, field), ...); }, fields);
  return hash;
}

bool same_body(const SimOp& a, const SimOp& b) {
  return fields_of(a) == fields_of(b);
}

std::size_t hash_of(const SimOp& op) {
  return hash_value(fields_of(op));
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
