#include "collectives/piecewise_sigmoid.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

constexpr double kBusBytesPerGBpsUs = kBytesPerGB / kUsPerSecond;  // bytes moved per us at 1 GB/s
constexpr char kCurveSource[] = "<curve>";

double logistic(double x, double x0, double k) {
  return 1.0 / (1.0 + std::exp(-k * (x - x0)));
}

// log10 of the bus bandwidth (GB/s) at which bus_bytes take duration_us.
double log10_bandwidth(double bus_bytes, DurationUs duration_us) {
  return std::log10(bus_bytes / (duration_us * kBusBytesPerGBpsUs));
}

std::string number(double value) {
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

}  // namespace

PiecewiseSigmoidModel PiecewiseSigmoidModel::from_free_parameters(double m1_bus_bytes,
                                                                  double m2_bus_bytes,
                                                                  DurationUs ts_us,
                                                                  BandwidthGBps bwmax_GBps,
                                                                  double x0, double k) {
  if (!(ts_us > 0.0))
    throw InputError(kCurveSource, "ts_us",
                     "start-up latency must be positive, got " + number(ts_us));
  if (!(bwmax_GBps > 0.0))
    throw InputError(kCurveSource, "bwmax_GBps",
                     "peak bandwidth must be positive, got " + number(bwmax_GBps));
  if (!(m1_bus_bytes > 0.0) || !(m2_bus_bytes > m1_bus_bytes))
    throw InputError(
        kCurveSource, "m1_bus_bytes/m2_bus_bytes",
        "need 0 < m1 < m2, got m1=" + number(m1_bus_bytes) + " m2=" + number(m2_bus_bytes));
  if (!(k > 0.0) || !std::isfinite(x0))
    throw InputError(kCurveSource, "k", "sigmoid steepness must be positive, got " + number(k));
  const double x1 = std::log2(m1_bus_bytes);
  const double x2 = std::log2(m2_bus_bytes);
  const double s1 = logistic(x1, x0, k);
  const double s2 = logistic(x2, x0, k);
  if (!(s2 - s1 > 1e-12))
    throw InputError(kCurveSource, "x0/k",
                     "sigmoid is flat between m1 and m2 (x0=" + number(x0) + ", k=" + number(k) +
                         "): no continuous curve");
  const double y1 = log10_bandwidth(m1_bus_bytes, ts_us);
  const double y2 =
      log10_bandwidth(m2_bus_bytes, ts_us + m2_bus_bytes / (bwmax_GBps * kBusBytesPerGBpsUs));
  SigmoidCurveParameters parameters;
  parameters.L = (y2 - y1) / (s2 - s1);
  parameters.b = y1 - parameters.L * s1;
  parameters.x0 = x0;
  parameters.k = k;
  parameters.m1_bus_bytes = m1_bus_bytes;
  parameters.m2_bus_bytes = m2_bus_bytes;
  parameters.ts_us = ts_us;
  parameters.bwmax_GBps = bwmax_GBps;
  return PiecewiseSigmoidModel(parameters);
}

PiecewiseSigmoidModel PiecewiseSigmoidModel::from_stored(const SigmoidCurveParameters& stored,
                                                         const std::string& file,
                                                         const std::string& location) {
  PiecewiseSigmoidModel rebuilt = [&] {
    try {
      return from_free_parameters(stored.m1_bus_bytes, stored.m2_bus_bytes, stored.ts_us,
                                  stored.bwmax_GBps, stored.x0, stored.k);
    } catch (const InputError& error) {
      throw InputError(file, location + ": " + error.location(), error.problem());
    }
  }();
  const auto close = [](double a, double b) {
    return std::abs(a - b) <= 1e-6 * std::max({1.0, std::abs(a), std::abs(b)});
  };
  if (!close(rebuilt.parameters_.L, stored.L) || !close(rebuilt.parameters_.b, stored.b))
    throw InputError(
        file, location + ": L/b",
        "stored sigmoid (L=" + number(stored.L) + ", b=" + number(stored.b) +
            ") is not continuous with ts and BWmax (expected L=" + number(rebuilt.parameters_.L) +
            ", b=" + number(rebuilt.parameters_.b) + ")");
  return rebuilt;
}

double PiecewiseSigmoidModel::sigmoid(double log2_bus_bytes) const {
  return parameters_.L * logistic(log2_bus_bytes, parameters_.x0, parameters_.k) + parameters_.b;
}

CurveRegion PiecewiseSigmoidModel::region(double bus_bytes) const {
  if (bus_bytes <= parameters_.m1_bus_bytes)
    return CurveRegion::kLatency;
  if (bus_bytes >= parameters_.m2_bus_bytes)
    return CurveRegion::kBandwidth;
  return CurveRegion::kTransition;
}

DurationUs PiecewiseSigmoidModel::duration_us(double bus_bytes) const {
  switch (region(bus_bytes)) {
    case CurveRegion::kLatency:
      return parameters_.ts_us;
    case CurveRegion::kBandwidth:
      return parameters_.ts_us + bus_bytes / (parameters_.bwmax_GBps * kBusBytesPerGBpsUs);
    case CurveRegion::kTransition:
      break;
  }
  const double bandwidth = std::pow(10.0, sigmoid(std::log2(bus_bytes)));
  return bus_bytes / (bandwidth * kBusBytesPerGBpsUs);
}

BandwidthGBps PiecewiseSigmoidModel::bus_bandwidth_GBps(double bus_bytes) const {
  return bus_bytes / (duration_us(bus_bytes) * kBusBytesPerGBpsUs);
}

}  // namespace perfsim::collectives
