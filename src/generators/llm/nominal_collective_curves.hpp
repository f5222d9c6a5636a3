#pragma once
// Collective curves for a topology when no fitted assets are at hand (the embedded default
// scenario must run from the repository alone): for every curve a topology names, a continuous
// three-region curve (seed 001 Sec. IV-A) whose saturated bus bandwidth is a fixed share of
// the link class's nominal bandwidth and whose start-up latency is that of the medium. These
// are stand-ins, not measurements: the run says so, and `perfsim fit` assets replace them.
#include "collectives/fitted_curve.hpp"
#include "topology/topology.hpp"

namespace perfsim::generators::llm {

// Share of the nominal per-GPU bandwidth nccl-tests reach as bus bandwidth on large messages
// (about 0.8 on NVSwitch and InfiniBand NDR).
inline constexpr double kNominalBusEfficiency = 0.8;

collectives::CurveSet nominal_collective_curves(const topology::Topology& topology);

}  // namespace perfsim::generators::llm
