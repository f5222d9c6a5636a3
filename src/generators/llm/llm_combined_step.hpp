#pragma once
// Megatron-Core's combined 1F1B step (--overlap-moe-expert-parallel-comm; pipeline_parallel/
// combined_1f1b.py, models/common/model_chunk_schedule_plan.py TransformerLayerSchedulePlan.run):
// one micro-batch's forward and another's backward, each cut at its MoE all-to-alls into
// pieces, run alternately so that every EP all-to-all of one runs on the communication stream
// beside a compute piece of the other. Per layer pair Megatron issues forward attention beside
// the backward's combine all-to-all, the backward's experts beside the forward's dispatch, the
// forward's experts beside the backward's dispatch, the backward's attention beside the
// forward's combine.
//
// The engine starts a collective once the compute queued before it is done (seed 001
// Algorithm 1), so the interleaved order posts each all-to-all before the compute piece it runs
// beside: backward piece, backward all-to-all, forward piece, forward all-to-all, backward
// piece, ... (the pieces of the side with more all-to-alls follow at the end). The compute ops
// of a piece queued after the other side's all-to-all that start while it is estimated to be in
// flight are marked as running beside it (contention_sms, contention_hbm_GBps): the
// all-to-all's estimate is its bytes at the EP group's bus bandwidth (max(sent, received) x
// (n - 1) / n / bus rate), each op's the larger of its FLOPs at the device's sustained GEMM
// rate and its tensors' bytes at the device's HBM bandwidth (a roofline). The op the
// all-to-all ends in is marked with the share of it the estimate overlaps (SMs and HBM
// bandwidth scaled by that share, rounded up: a time average). Without the rates (no topology
// bus rates or device rates) every compute op of the piece is marked whole: an upper bound, as
// for the overlapped gradient buckets.
//
// With delay_wgrad_compute (llm_delayed_wgrad.hpp) the backward's delayed weight-gradient ops
// of a piece run after the backward's next all-to-all is posted, before the forward's piece
// beside it: Megatron's mlp_bwd_dw after dispatch_bwd is queued (both wait only for mlp_bwd),
// attn_bwd_dw beside the next layer's combine_bwd; those of the backward's last piece stay in
// it, and none moves past a gradient bucket or synchronize of its piece. A backward alone
// (forward range empty) is reordered the same way.
#include <cstddef>
#include <vector>

#include "perfsim/trace.hpp"

namespace perfsim::generators::llm {

// The resources an EP all-to-all kernel takes from compute beside it.
struct AllToAllContention {
  int sms = 0;             // ParallelConfig::comm_sms
  double hbm_GBps = 0;     // HBM bandwidth it moves (kernels/comm_hbm_traffic.hpp); 0: not modelled
  double bus_GBps = 0;     // the EP group's bus bandwidth; 0: unknown (mark whole pieces)
  double gemm_TFLOPs = 0;  // the device's sustained GEMM rate; 0: unknown (mark whole pieces)
  double device_hbm_GBps = 0;  // the device's streaming HBM bandwidth; 0: unknown (as above)
};

// The estimated time (us) of `all_to_all` at `bus_GBps`, 0 without a rate.
double all_to_all_estimate_us(const Op& all_to_all, double bus_GBps);

// True for an op whose kernel is an all-to-all on the expert-parallel stream.
bool is_expert_all_to_all(const Op& op);

// Reorders ops[forward_begin, ops.size()) in place, where ops[forward_begin, backward_begin)
// are the forward step's ops and ops[backward_begin, end) the backward step's, into the
// combined order above, marks the overlapped compute ops and renumbers the op ids in the new
// order (the ids the range held, ascending). Returns the number of compute ops marked.
std::size_t interleave_combined_step(std::vector<Op>& ops, std::size_t forward_begin,
                                     std::size_t backward_begin, const AllToAllContention& beside);

}  // namespace perfsim::generators::llm
