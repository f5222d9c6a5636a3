#pragma once
// A simulator's host overhead means (T1..T5), looked up once per distinct name. The names of a
// program's ops and kernels are views into its NamePool, which lives as long as the program
// (longer than any simulator of it), so while a simulator runs, a name's address and length
// identify its text: a lookup is a binary search over a few dozen addresses instead of string
// compares down HostOverheads' maps, which cost about a dozen memcmp calls per simulated op
// (~15 % of an unfolded default run's instructions). The values are HostOverheads' own, so
// results do not change.
#include <algorithm>
#include <cstddef>
#include <string_view>
#include <vector>

#include "perfsim/host_overheads.hpp"

namespace perfsim::engine {

// T1, T2, T3 and T5 of one op name (HostOverheads::t1_us ...).
struct OpHostCosts {
  DurationUs t1_us = 0;
  DurationUs t2_us = 0;
  DurationUs t3_us = 0;
  DurationUs t5_us = 0;
  bool phase_exempt = false;  // keeps its T1 in every phase (HostOverheads::t1_phase_exempt)
};

class HostCostCache {
 public:
  explicit HostCostCache(const HostOverheads& overheads) : overheads_(overheads) {}
  // Both take a view that stays valid and unchanged while the cache is used (a NamePool name).
  const OpHostCosts& op(std::string_view name) {
    return lookup(ops_, name, [this](std::string_view key) {
      return OpHostCosts{overheads_.t1_us(key), overheads_.t2_us(key), overheads_.t3_us(key),
                         overheads_.t5_us(key), overheads_.t1_phase_exempt_op(key)};
    });
  }
  // T1 of an op with these costs in `phase` (a NamePool name, as above): adjusted by the
  // phase's delta and kept non-negative. Without phase deltas (every profile-derived set) it
  // is costs.t1_us itself.
  DurationUs t1_us(const OpHostCosts& costs, std::string_view phase) {
    if (overheads_.t1_delta_per_phase_us.empty() || costs.phase_exempt)
      return costs.t1_us;
    const DurationUs delta = lookup(
        phases_, phase, [this](std::string_view key) { return overheads_.t1_delta_us(key); });
    return std::max<DurationUs>(0, costs.t1_us + delta);
  }
  DurationUs t4_us(std::string_view runtime_api) {
    // Nearly every kernel names the launch API the one before it named.
    if (has_last_api_ && runtime_api.data() == last_api_.data() &&
        runtime_api.size() == last_api_.size())
      return last_t4_us_;
    last_t4_us_ =
        lookup(apis_, runtime_api, [this](std::string_view key) { return overheads_.t4_us(key); });
    last_api_ = runtime_api;
    has_last_api_ = true;
    return last_t4_us_;
  }

 private:
  template <class Value>
  struct Entry {
    const char* data;
    std::size_t size;
    Value value;
  };
  template <class Value>
  static bool before(const Entry<Value>& entry, std::string_view key) {
    if (entry.data != key.data())
      return std::less<const char*>()(entry.data, key.data());
    return entry.size < key.size();
  }
  template <class Value, class Compute>
  static const Value& lookup(std::vector<Entry<Value>>& entries, std::string_view key,
                             Compute compute) {
    auto it = std::lower_bound(entries.begin(), entries.end(), key, before<Value>);
    if (it == entries.end() || it->data != key.data() || it->size != key.size())
      it = entries.insert(it, Entry<Value>{key.data(), key.size(), compute(key)});
    return it->value;
  }

  const HostOverheads& overheads_;
  std::vector<Entry<OpHostCosts>> ops_;
  std::vector<Entry<DurationUs>> apis_;
  std::vector<Entry<DurationUs>> phases_;  // T1 delta per phase
  std::string_view last_api_;              // the API t4_us looked up last, once has_last_api_
  bool has_last_api_ = false;
  DurationUs last_t4_us_ = 0;
};

}  // namespace perfsim::engine
