#pragma once
// Model assets, collective part: fitted curves in table /collectives/curves (one row per curve:
// name, collective, n_ranks, n_nodes, source_file, the eight parameters L, x0, k, b,
// m1_bus_bytes, m2_bus_bytes, ts_us, bwmax_GBps, and its fit errors gmae, mape, stddev as
// fractions) and the fit residuals in /collectives/residuals (curve, bytes, in_place,
// measured_us, predicted_us, region).
#include <map>
#include <string>
#include <vector>

#include "collectives/fitted_curve.hpp"

namespace perfsim::assets {

inline constexpr char kCollectiveCurvesTable[] = "/collectives/curves";
inline constexpr char kCollectiveResidualsTable[] = "/collectives/residuals";

using ResidualsByCurve = std::map<std::string, std::vector<collectives::PredictionPoint>>;

void write_collective_curves(const std::string& file_path, const collectives::CurveSet& curves,
                             const ResidualsByCurve& residuals, bool truncate_file = false);
// Throws InputError naming file, table row and parameter for a curve that is not continuous or
// has an unknown collective.
collectives::CurveSet read_collective_curves(const std::string& file_path);
ResidualsByCurve read_collective_residuals(const std::string& file_path);

}  // namespace perfsim::assets
