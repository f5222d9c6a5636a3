#pragma once
// Measured curves carried to group shapes and collectives nobody measured, by NCCL's algorithm
// model (nccl_tuning.hpp).
//
// A fitted curve c_ref (PiecewiseSigmoidModel, measured for collective K_ref on shape S_ref)
// keeps the measured shape of the size dependence; the algorithm model m supplies what changes
// with the collective and the shape (algorithm and protocol switches, ring latency linear in
// ranks, tree latency logarithmic in nodes, the NIC or NVLink bandwidth that binds):
//   t(K, B, S) = c_ref(B x busfactor(K_ref, n_ref)) x m(K, B, S) / m(K_ref, B, S_ref).
// The same collective on the same shape gives back c_ref exactly.
//
// Which reference: among the curves measured across nodes when S spans nodes (else those in
// one node), the nearest below and above S in node count (in rank count inside a node); with
// both, the two transfers are interpolated geometrically, weights linear in log(count), so a
// per-fabric efficiency that drifts with the count is followed; with one side only, that one.
//
// Calibration (before any transfer): the model's nominal fabric (nccl_fabric.hpp) is corrected
// by the measured sweeps: at each sweep's largest size the bandwidth term that binds in the
// model (intra-node ring, NVLS, or network) is scaled so the model meets the measurement, and at
// its smallest sizes the network hop latency likewise (multi-node sweeps). Sweeps in one node go
// first, then by node count; once an in-node sweep has set the NVLink terms, multi-node sweeps
// only set the network ones. The network factor never exceeds 1: NICs do not beat line rate.
// Under a tuner plugin's ring boundary (settings.tuner_ring_from_bytes_per_rank > 0), an
// all-reduce sweep over more than two nodes runs the trees below the boundary and the ring
// above: the trees' share of the network rate (tree_net_scale) is then set the same way at the
// largest size below the boundary, and the network term at the largest size once more. An
// all-to-all sweep across nodes sets the cost per remote peer (peer_latency_us: one message per
// peer, posted one after another) at its smallest sizes instead of the network hop, then its
// largest size once more. `settings` describe how the sweeps ran.
#include <span>
#include <string>
#include <vector>

#include "collectives/fitted_curve.hpp"
#include "collectives/nccl_fabric.hpp"
#include "collectives/nccl_tuning.hpp"

namespace perfsim::collectives {

// One reference carried to (kind, bytes, shape): the formula above. `reference_fabric` is the
// fabric the reference was measured on (all NICs of its nodes), `fabric` the target group's.
// `settings` (NCCL_ALGO / NCCL_PROTO-like, a tuner plugin's boundary) describe the target's run,
// `reference_settings` the choice the reference curve stands for: NCCL's own by default; in a
// leave-one-out, the cluster's NCCL_ALGO / NCCL_PROTO without its tuner plugin, whose step is
// taken out of the sweeps before the curves are fitted (without_tuner_step).
DurationUs carried_duration_us(const FittedCurve& reference, const NcclFabric& reference_fabric,
                               CollectiveKind kind, double bytes, const CommShape& shape,
                               const NcclFabric& fabric, const NcclSettings& settings,
                               const NcclSettings& reference_settings = {});

// The references a shape is carried from (see "Which reference" above): lower and upper (the
// same one when only one side exists) and the lower one's weight in the geometric mean.
struct ReferenceBracket {
  const FittedCurve* lower = nullptr;
  const FittedCurve* upper = nullptr;
  double lower_weight = 1.0;
};
// `references` must not be empty.
ReferenceBracket bracket_references(std::span<const FittedCurve> references,
                                    const CommShape& shape);
// Carries the bracket's references and interpolates (carried_duration_us for each).
DurationUs bracketed_duration_us(const ReferenceBracket& bracket,
                                 const NcclFabric& reference_fabric, CollectiveKind kind,
                                 double bytes, const CommShape& shape, const NcclFabric& fabric,
                                 const NcclSettings& settings,
                                 const NcclSettings& reference_settings = {});

// A fitted curve read back as a sweep on every power of two from 8 B to 16 GiB, so that model
// assets (curves without their data) can calibrate a fabric.
CollectiveSweep sampled_sweep(const FittedCurve& curve);

// Region by the model's split of the time: latency-bound below 20% transfer time, bandwidth-
// bound above 80%, transition between.
CurveRegion model_region(const NcclEstimate& estimate);

FabricCalibration calibrate_fabric(const NcclFabric& nominal, const NcclSettings& settings,
                                   std::span<const CollectiveSweep> sweeps);

class CurveTransfer {
 public:
  // `references` must not be empty (RuntimeFailure).
  CurveTransfer(NcclFabric fabric, NcclSettings settings, std::vector<FittedCurve> references);
  // With one fabric per reference (same order), each reference is carried on the fabric
  // calibrated up to its own node count, so its model meets its own measurement and the
  // network efficiency at the target is that of the bracketing references, interpolated like
  // the curves (a NIC's efficiency drifts with node count; one fabric calibrated on the largest
  // count would skew every ratio m(target) / m(reference) at the others).
  // `reference_settings`: how the references ran (see carried_duration_us).
  CurveTransfer(NcclFabric fabric, NcclSettings settings, std::vector<FittedCurve> references,
                std::vector<NcclFabric> reference_fabrics, NcclSettings reference_settings = {});

  DurationUs duration_us(CollectiveKind kind, double bytes, const CommShape& shape) const;
  // The names of the curves duration_us uses for `shape`, for provenance.
  std::vector<std::string> references_for(const CommShape& shape) const;
  const NcclFabric& fabric() const { return fabric_; }
  const NcclSettings& settings() const { return settings_; }

 private:
  NcclFabric fabric_;
  NcclSettings settings_;
  std::vector<FittedCurve> references_;
  std::vector<NcclFabric> reference_fabrics_;  // empty: every reference on fabric_
  NcclSettings reference_settings_;            // how the references ran
};

// Predicts every sample of `sweep` on its own shape.
std::vector<PredictionPoint> predict_sweep(const CurveTransfer& transfer,
                                           const CollectiveSweep& sweep);

// `settings` without a tuner plugin's rule (NCCL's own choice among what they enable).
NcclSettings without_tuner(NcclSettings settings);
// `sweep` as if run with NCCL's own choice instead of the tuner plugin of `settings`: each time
// x m(own choice) / m(tuner) on `fabric` (unchanged where the two choose alike).
CollectiveSweep without_tuner_step(CollectiveSweep sweep, const NcclFabric& fabric,
                                   const NcclSettings& settings);

// Leave one out: for each sweep in `held_out`, fit curves and calibrate the fabric on all the
// other sweeps of `sweeps` (never on the held one), then predict it. Each multi-node reference
// is carried on the fabric calibrated on the training sweeps up to its own node count (it
// last), see CurveTransfer. `settings` describe the held run, `training_settings` how the
// training sweeps ran (the same cluster: its NCCL settings and tuner plugin; default NCCL's own
// choice). The fabrics are calibrated on the sweeps as run (tuner included); under a tuner
// plugin each curve is fitted to its sweep with the tuner's step taken out (without_tuner_step,
// on the reference's own fabric), and the model puts the step back at the held rank count:
// a smooth curve fitted across the step would carry half of it to every other node count.
struct HeldOutResult {
  std::string name;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int n_ranks = 0;
  int n_nodes = 1;
  std::vector<std::string> references;  // curves the prediction came from
  std::vector<PredictionPoint> points;
};
// Fits and calibrates on `training` only, then predicts `target`.
HeldOutResult predict_held_out(const NcclFabric& nominal, const NcclSettings& settings,
                               std::span<const CollectiveSweep> training,
                               const CollectiveSweep& target,
                               const NcclSettings& training_settings = {});
std::vector<HeldOutResult> leave_one_out(const NcclFabric& nominal, const NcclSettings& settings,
                                         std::span<const CollectiveSweep> sweeps,
                                         std::span<const std::string> held_out,
                                         const NcclSettings& training_settings = {});

}  // namespace perfsim::collectives
