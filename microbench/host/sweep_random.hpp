#pragma once
// Reproducible random numbers for sweeps and index batches: std::mt19937_64 is specified bit
// for bit by the standard, the <random> distributions are not, so the draws are derived here.
#include <cstdint>
#include <random>
#include <span>
#include <utility>

namespace perfsim::microbench {

class SweepRandom {
 public:
  explicit SweepRandom(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [low, high] (inclusive); low <= high.
  std::int64_t uniform_int(std::int64_t low, std::int64_t high) {
    const auto span = static_cast<std::uint64_t>(high - low) + 1;
    if (span == 0)  // the whole 64-bit range
      return static_cast<std::int64_t>(engine_());
    // Rejection keeps the draw unbiased: discard the incomplete last block of the range.
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    std::uint64_t draw = engine_();
    while (draw >= limit)
      draw = engine_();
    return low + static_cast<std::int64_t>(draw % span);
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  template <typename T>
  void shuffle(std::span<T> values) {
    for (std::size_t i = values.size(); i > 1; --i) {
      const auto j = static_cast<std::size_t>(uniform_int(0, static_cast<std::int64_t>(i) - 1));
      std::swap(values[i - 1], values[j]);
    }
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace perfsim::microbench
