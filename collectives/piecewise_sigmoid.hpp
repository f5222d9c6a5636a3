#pragma once
// The three-region collective curve of seed 001 Sec. IV-A (eq. 5-7), made continuous.
//
// The curve maps bus bytes B = message bytes x bus factor (bus_factor.hpp) to a duration, so one
// curve serves any group size on the same link class; for a fixed group size it is the seed's
// curve over x = log2(message bytes) with x0 shifted by log2(factor).
//   region 1, B <= m1:      t = ts
//   region 2, m1 < B < m2:  t = B / 10^sigmoid(log2 B),  sigmoid(x) = L / (1 + e^{-k (x - x0)}) + b
//   region 3, B >= m2:      t = ts + B / BWmax
// Continuity: the seed fits the three pieces separately, so the curve jumps at m1 and m2. Here
// ts, BWmax, x0, k, m1 and m2 are free and L and b are solved from the two conditions
//   sigmoid(log2 m1) = log10(m1 / ts)                 (region 2 meets region 1 at m1)
//   sigmoid(log2 m2) = log10(m2 / (ts + m2 / BWmax))  (region 2 meets region 3 at m2)
// which are linear in (L, b). All eight parameters are stored; a curve read back whose L and b
// disagree with the continuity solution is rejected.
#include <string>

#include "perfsim/units.hpp"

namespace perfsim::collectives {

struct SigmoidCurveParameters {
  double L = 0.0;   // sigmoid height, log10(GB/s)
  double x0 = 0.0;  // sigmoid centre, log2(bus bytes)
  double k = 1.0;   // sigmoid steepness, per log2(bus bytes)
  double b = 0.0;   // sigmoid floor, log10(GB/s)
  double m1_bus_bytes = 0.0;
  double m2_bus_bytes = 0.0;
  DurationUs ts_us = 0.0;          // start-up latency
  BandwidthGBps bwmax_GBps = 0.0;  // saturated bus bandwidth
};

enum class CurveRegion { kLatency = 1, kTransition = 2, kBandwidth = 3 };

class PiecewiseSigmoidModel {
 public:
  // Builds the continuous curve from its six free parameters. Throws InputError (file "<curve>",
  // location = the offending parameter) when ts or BWmax are not positive, m1 >= m2, k <= 0, or
  // the sigmoid is flat between m1 and m2 so that no continuous (L, b) exists.
  static PiecewiseSigmoidModel from_free_parameters(double m1_bus_bytes, double m2_bus_bytes,
                                                    DurationUs ts_us, BandwidthGBps bwmax_GBps,
                                                    double x0, double k);
  // Reads back stored parameters; `file` and `location` ("/collectives/curves row 3") name the
  // source in errors. Throws InputError when L and b break continuity by more than a relative
  // 1e-6, or when the free parameters are invalid (location then adds the parameter).
  static PiecewiseSigmoidModel from_stored(const SigmoidCurveParameters& stored,
                                           const std::string& file, const std::string& location);

  DurationUs duration_us(double bus_bytes) const;
  BandwidthGBps bus_bandwidth_GBps(double bus_bytes) const;
  CurveRegion region(double bus_bytes) const;
  double sigmoid(double log2_bus_bytes) const;
  const SigmoidCurveParameters& parameters() const { return parameters_; }

 private:
  explicit PiecewiseSigmoidModel(SigmoidCurveParameters parameters) : parameters_(parameters) {}
  SigmoidCurveParameters parameters_;
};

}  // namespace perfsim::collectives
