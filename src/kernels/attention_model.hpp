#pragma once
// Fused (flash) attention kernels. Where the device file measured an implementation
// ("attention_tflops": cuDNN's fused attention on H100, which Transformer Engine selects on
// Hopper), the kernel runs at the measured throughput for its mask, direction and sequence
// length (linear in log2 of the length between the measured points, the end points beyond
// them). Elsewhere it is priced as the GEMM of its unmasked work (the analytical GEMM model's
// efficiency, an upper bound on what attention reaches: softmax and rescaling run between the
// two matmuls). A causal mask halves the work in both.
//
// The length that sets the throughput is the one the kernel loops over: keys forward (each
// block of queries streams the keys), queries backward (each block of keys streams the
// queries); equal for the square kernels the tables measured. Without a measured causal
// backward, its throughput is the backward's times the causal-to-unmasked ratio measured
// forward at the same length (the same diagonal tiles and uneven blocks slow both).
//
// Sliding-window attention (issue 15): the kernel computes the band of the causal score matrix,
// each query against min(window, position + 1) keys (AttentionWork::band_pairs). Its throughput
// is the causal kernel's at the window's length, the keys each block of queries streams (masked
// tiles on both edges of the band, as on the diagonal of a causal kernel of that length); below
// the shortest measured length, the shortest's. Nominal: no windowed kernel was measured. The
// GEMM fallback prices the band as queries x its mean keys per query.
#include <string>

#include "devices/device_spec.hpp"
#include "kernels/kernel_work.hpp"

namespace perfsim::kernels {

// The device's measured throughput for `work` in TFLOP/s, or 0 without a table for its dtype.
double measured_attention_tflops(const AttentionWork& work, const devices::DeviceSpec& device);

// The GEMM the analytical fallback prices: queries x (unmasked) keys, k = 2 d forward, 5 d
// backward, one per head; with a value head dimension d_v apart from the query/key one d
// (multi-latent attention), k = d + d_v forward and 3 d + 2 d_v backward (AttentionWork::flops).
// The measured tables (one head dimension each) give the throughput whatever the dimensions.
GemmWork attention_as_gemm(const AttentionWork& work);

}  // namespace perfsim::kernels
