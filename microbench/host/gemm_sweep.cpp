#include "microbench/host/gemm_sweep.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>
#include <string>
#include <tuple>

#include "microbench/host/sweep_random.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {
namespace {

constexpr char kGemmSweepSource[] = "<gemm sweep>";

std::vector<std::int64_t> powers_of_two(std::int64_t low, std::int64_t high) {
  std::vector<std::int64_t> values;
  for (std::int64_t v = low; v <= high; v *= 2)
    values.push_back(v);
  return values;
}

void require_power_of_two(std::int64_t value, const char* option) {
  if (value <= 0 || !std::has_single_bit(static_cast<std::uint64_t>(value)))
    throw InputError(kGemmSweepSource, option,
                     "must be a positive power of two, got " + std::to_string(value));
}

void validate(const GemmSweepOptions& options) {
  if (options.dtypes.empty())
    throw InputError(kGemmSweepSource, "dtypes", "no dtype to measure");
  require_power_of_two(options.grid_min, "grid_min");
  require_power_of_two(options.grid_max, "grid_max");
  require_power_of_two(options.batched_grid_max, "batched_grid_max");
  if (options.grid_min > options.grid_max)
    throw InputError(kGemmSweepSource, "grid_min", "is larger than grid_max");
  if (options.random_shapes < 0 || options.random_min <= 0 ||
      options.random_min > options.random_max)
    throw InputError(kGemmSweepSource, "random_shapes",
                     "needs a non-negative count and 0 < random_min <= random_max");
  for (std::int64_t centre : options.neighbourhood_centres) {
    if (centre <= 0 || centre % 8 != 0)
      throw InputError(kGemmSweepSource, "neighbourhood_centres",
                       std::to_string(centre) + " is not a positive multiple of 8");
  }
  if (options.neighbourhood_radius <= 0 || options.neighbourhood_other <= 0)
    throw InputError(kGemmSweepSource, "neighbourhood_radius",
                     "radius and held size must be positive");
  for (std::int64_t batch : options.batch_counts) {
    if (batch <= 0)
      throw InputError(kGemmSweepSource, "batch_counts", "must be positive");
  }
  if (options.memory_cap_bytes <= 0)
    throw InputError(kGemmSweepSource, "memory_cap_bytes", "must be positive");
}

// Collects shapes in insertion order without repeats, dropping those over the memory cap.
class ShapeList {
 public:
  explicit ShapeList(Bytes memory_cap_bytes) : cap_(memory_cap_bytes) {}
  void add(const GemmShape& shape) {
    if (gemm_footprint_bytes(shape) > cap_)
      return;
    auto key = std::make_tuple(shape.m, shape.n, shape.k, shape.batch, shape.dtype);
    if (seen_.insert(key).second)
      shapes_.push_back(shape);
  }
  std::vector<GemmShape> take() { return std::move(shapes_); }

 private:
  Bytes cap_;
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, DType>> seen_;
  std::vector<GemmShape> shapes_;
};

std::int64_t log_uniform(SweepRandom& random, std::int64_t low, std::int64_t high) {
  const double log_low = std::log(static_cast<double>(low));
  const double log_high = std::log(static_cast<double>(high) + 1.0);
  const auto value =
      static_cast<std::int64_t>(std::exp(log_low + (log_high - log_low) * random.uniform01()));
  return std::clamp(value, low, high);
}

}  // namespace

Bytes gemm_footprint_bytes(const GemmShape& shape) {
  const Bytes element = shape.dtype == DType::kTFloat32 ? 4 : element_bytes(shape.dtype);
  return shape.batch * (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n) * element;
}

std::vector<std::int64_t> multiple_of_8_neighbourhood(std::int64_t centre, std::int64_t radius) {
  std::vector<std::int64_t> values;
  for (std::int64_t v = centre - radius; v <= centre + radius; ++v) {
    if (v > 0)
      values.push_back(v);
  }
  return values;
}

std::vector<GemmShape> gemm_sweep(const GemmSweepOptions& options) {
  validate(options);
  ShapeList list(options.memory_cap_bytes);
  SweepRandom random(options.seed);
  const auto grid = powers_of_two(options.grid_min, options.grid_max);
  const auto batched_grid = powers_of_two(options.grid_min, options.batched_grid_max);
  const std::int64_t held = options.neighbourhood_other;
  for (DType dtype : options.dtypes) {
    for (std::int64_t m : grid)
      for (std::int64_t n : grid)
        for (std::int64_t k : grid)
          list.add({m, n, k, 1, dtype});
    for (std::int64_t centre : options.neighbourhood_centres) {
      for (std::int64_t v : multiple_of_8_neighbourhood(centre, options.neighbourhood_radius)) {
        list.add({v, held, held, 1, dtype});
        list.add({held, v, held, 1, dtype});
        list.add({held, held, v, 1, dtype});
        list.add({128, v, 1024, 7, dtype});  // seed 003 Fig. 9: [7,128,1024] x [7,1024,X]
      }
    }
    for (std::int64_t batch : options.batch_counts)
      for (std::int64_t m : batched_grid)
        for (std::int64_t n : batched_grid)
          for (std::int64_t k : batched_grid)
            list.add({m, n, k, batch, dtype});
    for (int i = 0; i < options.random_shapes; ++i) {
      const std::int64_t m = log_uniform(random, options.random_min, options.random_max);
      const std::int64_t n = log_uniform(random, options.random_min, options.random_max);
      const std::int64_t k = log_uniform(random, options.random_min, options.random_max);
      list.add({m, n, k, 1, dtype});
    }
  }
  return list.take();
}

}  // namespace perfsim::microbench
