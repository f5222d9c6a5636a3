#include "microbench/host/zipf_indices.hpp"

#include <algorithm>
#include <cmath>

#include "microbench/host/sweep_random.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {
namespace {

// Rejection-inversion for Zipf over ranks 1..n (Hormann and Derflinger, "Rejection-inversion
// to generate variates from monotone discrete distributions", 1996): invert the integral H of
// the continuous density x^-s, accept a rank when the draw falls under its own bar.
class ZipfSampler {
 public:
  ZipfSampler(std::int64_t n, double exponent)
      : n_(static_cast<double>(n)),
        s_(exponent),
        h_low_(integral(1.5) - 1.0),
        h_high_(integral(n_ + 0.5)),
        squeeze_(2.0 - inverse(integral(2.5) - std::pow(2.0, -s_))) {}

  std::int64_t draw(SweepRandom& random) const {
    while (true) {
      const double u = h_high_ + random.uniform01() * (h_low_ - h_high_);
      const double x = inverse(u);
      const double k = std::clamp(std::floor(x + 0.5), 1.0, n_);
      if (k - x <= squeeze_ || u >= integral(k + 0.5) - std::pow(k, -s_))
        return static_cast<std::int64_t>(k);
    }
  }

 private:
  bool near_one() const { return std::abs(1.0 - s_) < 1e-8; }
  // H(x) = (x^(1-s) - 1) / (1 - s), log x for s = 1.
  double integral(double x) const {
    return near_one() ? std::log(x) : (std::pow(x, 1.0 - s_) - 1.0) / (1.0 - s_);
  }
  double inverse(double h) const {
    return near_one() ? std::exp(h) : std::pow(1.0 + h * (1.0 - s_), 1.0 / (1.0 - s_));
  }

  double n_;
  double s_;
  double h_low_;
  double h_high_;
  double squeeze_;
};

}  // namespace

std::vector<std::int64_t> zipf_indices(std::int64_t rows, std::int64_t count, double exponent,
                                       std::uint64_t seed) {
  constexpr char kSource[] = "<zipf indices>";
  if (rows <= 0)
    throw InputError(kSource, "rows", "must be positive");
  if (count < 0)
    throw InputError(kSource, "count", "must not be negative");
  if (!(exponent >= 0))
    throw InputError(kSource, "exponent", "must not be negative");
  SweepRandom random(seed);
  std::vector<std::int64_t> indices;
  indices.reserve(static_cast<std::size_t>(count));
  if (exponent == 0) {
    for (std::int64_t i = 0; i < count; ++i)
      indices.push_back(random.uniform_int(0, rows - 1));
    return indices;
  }
  const ZipfSampler sampler(rows, exponent);
  for (std::int64_t i = 0; i < count; ++i)
    indices.push_back(sampler.draw(random) - 1);
  return indices;
}

}  // namespace perfsim::microbench
