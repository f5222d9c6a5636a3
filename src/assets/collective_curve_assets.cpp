#include "assets/collective_curve_assets.hpp"

#include "hdf5/column_table.hpp"
#include "perfsim/error.hpp"

namespace perfsim::assets {

void write_collective_curves(const std::string& file_path, const collectives::CurveSet& curves,
                             const ResidualsByCurve& residuals, bool truncate_file) {
  h5::ColumnTable table;
  std::vector<std::string> name, collective, source;
  std::vector<std::int64_t> n_ranks, n_nodes;
  std::vector<double> L, x0, k, b, m1, m2, ts, bwmax, gmae, mape, stddev;
  for (const auto& [curve_name, curve] : curves) {
    const auto& p = curve.curve.parameters();
    name.push_back(curve_name);
    collective.emplace_back(collective_name(curve.measured_kind));
    source.push_back(curve.source_file);
    n_ranks.push_back(curve.n_ranks);
    n_nodes.push_back(curve.n_nodes);
    L.push_back(p.L);
    x0.push_back(p.x0);
    k.push_back(p.k);
    b.push_back(p.b);
    m1.push_back(p.m1_bus_bytes);
    m2.push_back(p.m2_bus_bytes);
    ts.push_back(p.ts_us);
    bwmax.push_back(p.bwmax_GBps);
    gmae.push_back(curve.fit_error.gmae);
    mape.push_back(curve.fit_error.mape);
    stddev.push_back(curve.fit_error.stddev);
  }
  table.add("name", name);
  table.add("collective", collective);
  table.add("n_ranks", n_ranks);
  table.add("n_nodes", n_nodes);
  table.add("source_file", source);
  table.add("L", L, "log10(GBps)");
  table.add("x0", x0, "log2(bytes)");
  table.add("k", k, "1/log2(bytes)");
  table.add("b", b, "log10(GBps)");
  table.add("m1_bus_bytes", m1, "bytes");
  table.add("m2_bus_bytes", m2, "bytes");
  table.add("ts_us", ts, "us");
  table.add("bwmax_GBps", bwmax, "GBps");
  table.add("gmae", gmae, "fraction");
  table.add("mape", mape, "fraction");
  table.add("stddev", stddev, "fraction");
  table.attributes["model"] =
      "continuous piecewise sigmoid over bus bytes (seed 001 Sec. IV-A eq. 5-7), "
      "collectives/piecewise_sigmoid.hpp";
  // Curves and residuals land together or not at all.
  h5::OutputFile output(file_path, truncate_file);
  output.write_table(kCollectiveCurvesTable, table);

  h5::ColumnTable points;
  std::vector<std::string> curve_name;
  std::vector<std::int64_t> bytes, in_place, region;
  std::vector<double> measured, predicted;
  for (const auto& [owner, rows] : residuals) {
    for (const auto& point : rows) {
      curve_name.push_back(owner);
      bytes.push_back(point.bytes);
      in_place.push_back(point.in_place ? 1 : 0);
      region.push_back(static_cast<std::int64_t>(point.region));
      measured.push_back(point.measured_us);
      predicted.push_back(point.predicted_us);
    }
  }
  points.add("curve", curve_name);
  points.add("bytes", bytes, "bytes");
  points.add("in_place", in_place);
  points.add("region", region);
  points.add("measured_us", measured, "us");
  points.add("predicted_us", predicted, "us");
  output.write_table(kCollectiveResidualsTable, points);
  output.commit();
}

collectives::CurveSet read_collective_curves(const std::string& file_path) {
  const h5::ColumnTable table = h5::read_table(file_path, kCollectiveCurvesTable);
  collectives::CurveSet curves;
  const auto& name = table.strings("name");
  const auto& collective = table.strings("collective");
  for (std::size_t row = 0; row < table.rows(); ++row) {
    const std::string where = std::string(kCollectiveCurvesTable) + " row " + std::to_string(row) +
                              " ('" + name[row] + "')";
    const auto kind = parse_collective(collective[row]);
    if (!kind)
      throw InputError(file_path, where, "unknown collective '" + collective[row] + "'");
    collectives::SigmoidCurveParameters p;
    p.L = table.doubles("L")[row];
    p.x0 = table.doubles("x0")[row];
    p.k = table.doubles("k")[row];
    p.b = table.doubles("b")[row];
    p.m1_bus_bytes = table.doubles("m1_bus_bytes")[row];
    p.m2_bus_bytes = table.doubles("m2_bus_bytes")[row];
    p.ts_us = table.doubles("ts_us")[row];
    p.bwmax_GBps = table.doubles("bwmax_GBps")[row];
    collectives::FittedCurve curve{
        name[row],
        *kind,
        static_cast<int>(table.integers("n_ranks")[row]),
        static_cast<int>(table.integers("n_nodes")[row]),
        table.strings("source_file")[row],
        collectives::PiecewiseSigmoidModel::from_stored(p, file_path, where),
        {}};
    curve.fit_error.gmae = table.doubles("gmae")[row];
    curve.fit_error.mape = table.doubles("mape")[row];
    curve.fit_error.stddev = table.doubles("stddev")[row];
    curves.emplace(name[row], std::move(curve));
  }
  return curves;
}

ResidualsByCurve read_collective_residuals(const std::string& file_path) {
  const h5::ColumnTable table = h5::read_table(file_path, kCollectiveResidualsTable);
  ResidualsByCurve residuals;
  for (std::size_t row = 0; row < table.rows(); ++row) {
    residuals[table.strings("curve")[row]].push_back(
        {table.integers("bytes")[row], table.integers("in_place")[row] != 0,
         table.doubles("measured_us")[row], table.doubles("predicted_us")[row],
         static_cast<collectives::CurveRegion>(table.integers("region")[row])});
  }
  return residuals;
}

}  // namespace perfsim::assets
