#include "generators/llm/nominal_collective_curves.hpp"

#include <cmath>

namespace perfsim::generators::llm {
namespace {

// Start-up latency by medium: NVLink/NVSwitch about 10 us, network and PCIe about 20 us
// (nccl-tests small-message times of the fixtures are of this order).
DurationUs nominal_latency_us(const std::string& medium) {
  return medium.rfind("nvlink", 0) == 0 ? 10.0 : 20.0;
}

}  // namespace

collectives::CurveSet nominal_collective_curves(const topology::Topology& topology) {
  collectives::CurveSet curves;
  for (const auto& [class_name, link_class] : topology.link_classes) {
    for (const auto& [kind, reference] : link_class.curves) {
      if (curves.count(reference.asset))
        continue;
      // A NIC class's curve stands for a two-node sweep (the hierarchical model scales it to
      // more nodes); the others for one node.
      const bool network = topology.node.nics && topology.node.nics->link_class == class_name;
      const int n_nodes = network ? 2 : 1;
      const int reference_ranks = n_nodes * topology.node.gpus;
      // The curve as measured on the link that names it at scale 1 (or undo the scale), on the
      // NICs per node the curves stand for (NicSet::measured_count). A
      // two-node all-reduce sweep moves 2(N-1)/N / r of the message through each of a node's
      // r NICs (collectives/hierarchical.hpp), while its bus bytes are 2(n-1)/n of it: its bus
      // bandwidth is r x 2(n-1)/n / (2(N-1)/N) times one NIC's.
      const double link_GBps = link_class.bandwidth_GBps * kNominalBusEfficiency /
                               (reference.bandwidth_scale > 0 ? reference.bandwidth_scale : 1);
      const int nics = network ? topology.node.nics->measured_count() : 1;
      const double bus_over_nic = network ? nics * (2.0 * (reference_ranks - 1) / reference_ranks) /
                                                (2.0 * (n_nodes - 1) / n_nodes)
                                          : 1.0;
      const double bandwidth_GBps = link_GBps * bus_over_nic;
      const DurationUs ts_us = nominal_latency_us(link_class.medium);
      // Half the peak bandwidth where latency and transfer time are equal.
      const double half_bytes = ts_us * 1e-6 * bandwidth_GBps * 1e9;
      collectives::FittedCurve curve{
          reference.asset,
          kind,
          reference_ranks,
          n_nodes,
          "nominal: " + topology.source + " link class " + class_name,
          // Latency-bound below an eighth of the half-bandwidth size, bandwidth-bound above 32
          // times it, a sigmoid of unit steepness (per octave) between.
          collectives::PiecewiseSigmoidModel::from_free_parameters(
              half_bytes / 8, half_bytes * 32, ts_us, bandwidth_GBps, std::log2(half_bytes), 1.0),
          {}};
      curves.emplace(reference.asset, std::move(curve));
    }
  }
  return curves;
}

}  // namespace perfsim::generators::llm
