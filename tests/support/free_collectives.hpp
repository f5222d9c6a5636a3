#pragma once
// Collectives that take no time: for tests that time compute and schedules alone.
#include <string_view>

#include "perfsim/duration_source.hpp"

namespace perfsim::test_support {

class FreeCollectives final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall&) const override { return 0; }
  std::string_view name() const override { return "free"; }
};

}  // namespace perfsim::test_support
