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
};

class HostCostCache {
 public:
  explicit HostCostCache(const HostOverheads& overheads) : overheads_(overheads) {}
  // Both take a view that stays valid and unchanged while the cache is used (a NamePool name).
  const OpHostCosts& op(std::string_view name) {
    return lookup(ops_, name, [this](std::string_view key) {
      return OpHostCosts{overheads_.t1_us(key), overheads_.t2_us(key), overheads_.t3_us(key),
                         overheads_.t5_us(key)};
    });
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
  std::string_view last_api_;  // the API t4_us looked up last, once has_last_api_
  bool has_last_api_ = false;
  DurationUs last_t4_us_ = 0;
};

}  // namespace perfsim::engine
