// Golden regression guard: `perfsim validate runs` on the HELD-OUT published run tables
// (configs/validation/PUBLISHED.md: NeMo 24.07 and Megatron-Bridge 25.11/26.02 on DGX-H100, FP8)
// with the shipped calibration, as a user would run it. No perfsim parameter was fitted on these
// rows, so every figure is out of sample. The bounds are the errors measured when the tables were
// added, rounded up to the next whole percent: a guard against getting worse, not a target (the
// issue's goal is mean <= 10%, max <= 25%). The development table (Narayanan et al. 2021 Table 1)
// is deliberately not guarded here: physics work may use it.
#include <gtest/gtest.h>

#include <cstddef>
#include <iostream>
#include <string>

#include "support/shipped_run_table.hpp"

namespace perfsim::scenario {
namespace {

struct HeldOutTable {
  const char* file;
  std::size_t simulated_at_least;  // rows that simulated when the guard was set
  double mean_abs_error_bound;
  double max_abs_error_bound;
};

// Measured with the switches the sources state (README, "Published runs") after the Hopper FP8
// GEMM fit and the split accumulator of backward FP8 GEMMs (tests/data/kernels/hopper-gemm-public):
// NeMo 24.07 mean 16.14%, max 25.05%, 12 of 12 rows (before: 19.97%, 29.00%); Megatron-Bridge
// mean 5.72%, max 7.35%, 4 of 4 rows (before: 1.95%, 3.40%; now too slow, +5.7% signed: the
// same per-GEMM physics that moved every NeMo row towards its measurement moved these past it).
// The H100 sustained tensor-core rate and streaming bandwidth (configs/devices/H100-SXM.json,
// chosen on the development file published-dev-dgxc-h100.csv): NeMo 24.07 mean 13.31%, max
// 22.16%; Megatron-Bridge mean 8.38%, max 11.17% (+8.4% signed). The Megatron-Bridge bound
// moved from 6%/8% to these figures with that physics change (both held-out files together:
// 13.2% -> 12.1% mean); it guards against regressions, it was not chosen to fit the rows.
// The sustained clock fraction of tensor-core kernels (mamf-finder MSMF / MAMF, chosen on the
// development file; the held-out files were run once after it was committed): NeMo 24.07 mean
// 6.10%, max 14.21% (-2.9% signed); Megatron-Bridge mean 18.35%, max 21.19% (+18.3% signed:
// its newer software was already predicted too slow, and every tensor-core kernel now takes
// longer); both files together 12.1% -> 9.2% mean. Both bounds moved with that change. Issue
// 15's fused SwiGLU and RoPE on top (README "Megatron-Core fusions"; run once after both were
// merged): NeMo 24.07 mean 6.59%, max 14.69% (-3.7% signed); Megatron-Bridge mean 16.83%, max
// 19.23% (+16.8%); both files 9.15%. Bounds moved with it. Session 13 filled the Megatron-Bridge
// rows' TP-overlap, gradient-dtype, DP-overlap and cross-entropy switches from the H100 recipes
// (after their errors had been seen, PUBLISHED.md): mean 3.30%, max 5.68% (-0.4% signed).
// Issue 15's FP8 current scaling on the two 25.11 rows whose table states FP8-CS (fp8_recipe
// filled from the table before any run with it; designed from TE's code): Llama 3 70B +3.4% ->
// +5.3%, Llama 3.1 405B -5.7% -> -3.8%; mean 3.32%, max 5.34% (+0.5% signed). Bounds unchanged.
// Session 17: H100 rows take the shipped H100 calibration (fitted on the dense H100 development
// table, adopted by a rule fixed on development data before these files were run with it; run
// once after): NeMo 24.07 mean 6.49% -> 6.81%, max 14.69% -> 16.98% (GPT-3 175B on 128 GPUs
// +0.3% -> +17.0%); Megatron-Bridge 3.32% -> 4.23%, max 5.34% -> 9.05%. Bounds moved with it.
// Session 26: FP8 delayed scaling's amax reductions (designed from TE's and Megatron-Core's code,
// adopted by a rule written before any table ran with it): NeMo 24.07 mean 6.37% -> 6.86%, max
// 16.94% -> 20.01% (GPT-3 175B on 128 GPUs +16.9% -> +20.0%, host-bound); Megatron-Bridge 3.99%
// -> 4.19%, max 8.52% unchanged. The NeMo max bound moved with it.
constexpr HeldOutTable kTables[] = {
    {"published-nemo-24.07-h100.csv", 12, 0.07, 0.21},
    {"published-megatron-bridge-h100.csv", 4, 0.05, 0.10},
    // Session 13, first run (held out; 4 of 6 rows: PP 2 interleaving refused): GPT-OSS 120B
    // BF16 -33.0% / -27.7% (too fast), Qwen3 235B-A22B FP8 +19.5% / +16.7% (too slow; the
    // recipe's EP all-to-all overlap, moe_a2a_overlap, is not modelled): mean 24.23%, max 32.96%.
    // Issue 15 modelled it; the Qwen3 235B rows' moe_a2a_overlap filled as their recipe states
    // (held out; filled after the rows' errors had been seen): -17.7% / -17.8%, mean 24.04%,
    // max 32.96%. The bounds did not move. Issue 15 then let interleaving run over two stages:
    // the Qwen3 30B-A3B rows' first run (held out, nothing changed in them) -65.0% / -64.9%,
    // 6 of 6 rows, mean 37.68%, max 65.01%, every row too fast: the bounds follow the README's
    // figures (this guards against regressions; it was not chosen to fit the rows). Issue 15's
    // MoE host path (dispatcher counts, their all-gather and host wait, per-expert launches and
    // dummy gradients; the rule fixed from the frameworks' code before this file was run with
    // it): GPT-OSS -30.6% / -25.7%, Qwen3 30B-A3B -52.2% / -62.2%, Qwen3 235B -16.3% / -16.3%,
    // mean 33.88%, max 62.19%, every row still too fast; bounds rounded up to whole percents.
    // overlap_param_gather 1 (the recipes'): mean 33.87%, max 62.04%. Issue 15's FP8 current
    // scaling on the two 25.11 Qwen3 rows whose table states FP8-CS (fp8_recipe filled from the
    // table before any run with it; designed from TE's code): Qwen3 30B-A3B -62.0% -> -58.5%,
    // Qwen3 235B-A22B -16.2% -> -15.8%; mean 33.22%, max 58.52%. The MoE op inventory from
    // Megatron-Core's source (router, aux loss, permute, probabilities' all-to-all; the rows'
    // moe_router_fusion, moe_permute_fusion and force load balancing, designed from the code
    // before this file was run with it), alone: GPT-OSS -30.5% / -25.8%, Qwen3
    // 30B-A3B -48.7% / -61.8%, Qwen3 235B -15.8% / -15.7%, mean 33.03%, max 61.77%. Both together
    // (session 16's main): GPT-OSS -30.5% / -25.8%, Qwen3 30B-A3B -48.7% / -57.9%, Qwen3 235B
    // -15.8% / -15.2%, mean 32.29%, max 57.86%. Session 17's shipped H100 calibration (above):
    // GPT-OSS -23.7% / -23.4%, Qwen3 30B-A3B -31.3% / -52.7%, Qwen3 235B -12.6% / -11.7%, mean
    // 25.94%, max 52.74%. Session 19: the Qwen3 235B rows' delay_wgrad_compute, which the
    // performance scripts set with the EP all-to-all overlap (filled after the rows' errors had
    // been seen; it can only make them faster): -13.1% / -12.7%, mean 26.18%, max 52.74%.
    // Session 26, FP8 delayed scaling's amax reductions: mean 26.13% -> 25.84%, max 52.44%;
    // then TE's grouped GEMM in rounds of four experts: 25.52%, max 52.40%.
    {"published-megatron-bridge-moe-h100.csv", 6, 0.27, 0.53},
};

void check(const HeldOutTable& held_out) {
  const test_support::ShippedTableRun run =
      test_support::validate_shipped_table(held_out.file, "held out, out of sample");
  ASSERT_EQ(run.calibration_fitted_on, "published-dev-dgxc-h100.csv")
      << "these H100 rows take the calibration fitted on the H100 development table; they are "
         "out of sample only for a calibration fitted elsewhere";
  const RunValidationReport& report = run.report;
  EXPECT_GE(report.errors.count, held_out.simulated_at_least) << "a row stopped simulating";
  EXPECT_LE(report.errors.mean_abs, held_out.mean_abs_error_bound);
  EXPECT_LE(report.errors.max_abs, held_out.max_abs_error_bound);
}

TEST(ValidateRunsGolden, PublishedNemoH100HeldOut) {
  check(kTables[0]);
}

TEST(ValidateRunsGolden, PublishedMegatronBridgeH100HeldOut) {
  check(kTables[1]);
}

TEST(ValidateRunsGolden, PublishedMegatronBridgeMoeH100HeldOut) {
  check(kTables[2]);
}

}  // namespace
}  // namespace perfsim::scenario
