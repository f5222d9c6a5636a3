#include "assets/default_collective_curves.hpp"

#include <filesystem>
#include <set>

#include "assets/collective_curve_assets.hpp"
#include "generators/llm/nominal_collective_curves.hpp"

namespace perfsim::assets {

CollectiveCurveChoice default_collective_curves_for(const topology::Topology& topology,
                                                    const std::string& shipped_assets_path) {
  CollectiveCurveChoice choice;
  const auto nominal = [&](const std::string& why) {
    choice.curves = generators::llm::nominal_collective_curves(topology);
    choice.provenance = "NOMINAL (no data): link bandwidth x 0.8, 10/20 us latency, because " + why;
    choice.fitted = false;
    return choice;
  };
  if (shipped_assets_path.empty() || !std::filesystem::exists(shipped_assets_path))
    return nominal("no fitted assets at '" + shipped_assets_path + "'");
  collectives::CurveSet shipped = read_collective_curves(shipped_assets_path);
  std::set<std::string> named;
  bool stand_in = false;
  for (const auto& [class_name, link_class] : topology.link_classes) {
    for (const auto& [kind, reference] : link_class.curves) {
      if (!shipped.count(reference.asset))
        return nominal("'" + shipped_assets_path + "' has no curve '" + reference.asset +
                       "' that " + topology.source + " names");
      named.insert(reference.asset);
      stand_in |= reference.bandwidth_scale != 1.0;
      // Other counts are extra data (collective_model.cpp uses those the assets hold).
      for (const auto& other : reference.other_counts)
        if (shipped.count(other))
          named.insert(other);
    }
  }
  std::string sources;
  for (const auto& name : named) {
    const auto& curve = shipped.at(name);
    sources +=
        (sources.empty() ? "" : ", ") + name + " from " +
        (curve.source_file.empty() ? std::string("?")
                                   : std::filesystem::path(curve.source_file).filename().string());
  }
  choice.curves = std::move(shipped);
  choice.fitted = true;
  choice.provenance = "fitted: " + shipped_assets_path + " (" + sources + ")" +
                      (stand_in ? "; some link classes use bandwidth-scaled stand-ins (see the "
                                  "topology's notes)"
                                : "");
  const auto& nics = topology.node.nics;
  if (nics && (nics->curves_rate_Gbps > 0.0 || nics->hop_latency_us > 0.0 ||
               nics->bandwidth_efficiency != 1.0 || nics->peer_latency_us > 0.0 ||
               nics->tree_bandwidth_efficiency != 1.0))
    choice.provenance +=
        "; the NICs run another fabric's curves through nics/transport (fitted "
        "per the topology's note, collectives/README.md)";
  return choice;
}

}  // namespace perfsim::assets
