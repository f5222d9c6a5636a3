#pragma once
// Which collective curves a run uses when the user names no assets: the fitted curves shipped
// in configs/assets/collective_curves.h5 when they cover every curve the topology names (the
// curves behind them were measured: see collectives/README.md), else nominal stand-ins from
// link bandwidths (generators/llm/nominal_collective_curves.hpp). The provenance line says
// which, for the run's output.
#include <string>

#include "collectives/fitted_curve.hpp"
#include "topology/topology.hpp"

namespace perfsim::assets {

struct CollectiveCurveChoice {
  collectives::CurveSet curves;
  // "fitted: <assets file> (<curve> from <measured source>, ...)" or
  // "NOMINAL (no data): <what the curves are>, because <why>".
  std::string provenance;
  bool fitted = false;
};

// `shipped_assets_path` may not exist (a binary run outside its checkout): nominal then.
// Curves named by the topology as bandwidth-scaled stand-ins count as fitted data of another
// link, and the provenance says "stand-in".
CollectiveCurveChoice default_collective_curves_for(const topology::Topology& topology,
                                                    const std::string& shipped_assets_path);

}  // namespace perfsim::assets
