#pragma once
// A GPU as the kernel models see it: peak throughput per dtype and unit, memory sizes and
// bandwidths. Read from the human-written files in configs/devices/ (schema "perfsim-device/1",
// documented in configs/devices/README.md). Every figure carries where it came from.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim::devices {

enum class Provenance { kVendorSpec, kMeasured, kEstimate };
std::string_view provenance_name(Provenance provenance);

// One number of a device file, with where it came from.
struct Figure {
  double value = 0;
  Provenance provenance = Provenance::kEstimate;
  std::string source;
};

// Which units of the GPU execute the math.
enum class MathUnit { kTensorCore, kCudaCore };

// What the analytical GEMM model (kernels/analytical_gemm.hpp) reaches on one math unit: the
// fraction of the unit's peak a full tile sustains, and the k-steps of main-loop prologue and
// epilogue a tile cannot hide. Fitted on measured GEMM tables (`perfsim calibrate gemm`), or
// carried over from the nearest device that has such a table (the source says which).
struct GemmEfficiency {
  Figure peak_fraction;
  Figure pipeline_depth_k;
  Figure fixed_latency_us;  // optional in the file; value 0 when absent
};

// FP8 GEMMs on tensor cores ("gemm_efficiency": {"tensor_core_fp8": {...}}): their own fitted
// terms (FP8 tiles run the main loop twice as fast per k-step, so the bf16 fit does not carry
// over), and how much longer a GEMM takes when the accumulator is promoted to FP32 every few
// k-steps (cuBLASLt with CUBLASLT_MATMUL_DESC_FAST_ACCUM off, which Transformer Engine asks for
// in its dgrad and wgrad GEMMs). split_accumulator_time_factor is optional (1 when absent).
struct Fp8GemmEfficiency {
  GemmEfficiency terms;
  Figure split_accumulator_time_factor;
};

// What the convolution model (kernels/conv_model.hpp) reaches on one math unit: the GEMM terms
// above for cuDNN's implicit-GEMM kernels, the fraction of the direct convolution's multiplies
// that FFT/Winograd algorithms leave for stride-1 filters of 3x3 and larger, and the most
// slices a small-output GEMM is split into along k. Fitted on measured convolution tables
// (`perfsim calibrate conv`); absent: the GEMM efficiency and no fast algorithm.
struct ConvEfficiency {
  Figure peak_fraction;
  Figure pipeline_depth_k;
  Figure fixed_latency_us;  // optional in the file; value 0 when absent
  Figure fast_algorithm_flop_fraction;
  Figure max_split_k;
};

// Measured throughput of one fused-attention implementation on this GPU at one head dimension,
// in TFLOP/s as the FlashAttention papers count them (4 s^2 d per head forward, 2.5 times that
// backward, half of it under a causal mask), by sequence length (queries = keys). Optional
// "attention_tflops" in the file; without it attention is priced by the GEMM model.
struct AttentionThroughput {
  std::string implementation;  // which kernels were measured (e.g. cuDNN fused attention)
  double head_dim = 0;
  std::vector<DType> dtypes;             // the dtypes the table applies to
  std::vector<double> sequence_lengths;  // ascending
  std::vector<double> forward_tflops;    // no mask
  std::vector<double> forward_causal_tflops;
  std::vector<double> backward_tflops;
  // Empty when not measured: kernels/attention_model.hpp derives it from the others.
  std::vector<double> backward_causal_tflops;
  Provenance provenance = Provenance::kEstimate;
  std::string source;
};

struct DeviceSpec {
  std::string name;
  std::vector<std::string> aliases;  // names profilers record (Kineto deviceProperties)
  std::string architecture;
  std::string file;  // where it was read from
  Figure sm_count;
  Figure hbm_capacity_bytes;
  Figure hbm_bandwidth_GBps;
  Figure l2_size_bytes;
  Figure l2_bandwidth_GBps;
  Figure pcie_bandwidth_GBps;
  // Shortest time any kernel takes from start to end on this GPU: the floor under every
  // analytical prediction (a 16-element ReLU is not 0.01 us).
  Figure min_kernel_duration_us;
  std::map<DType, Figure> tensor_core_tflops;
  std::map<DType, Figure> cuda_core_tflops;
  // Optional "gemm_efficiency": {"tensor_core": {...}, "cuda_core": {...}}; a unit without an
  // entry uses the analytical model's built-in estimates.
  std::map<MathUnit, GemmEfficiency> gemm_efficiency;
  // Optional "gemm_efficiency/tensor_core_fp8"; absent: the analytical model's FP8 estimate.
  std::optional<Fp8GemmEfficiency> fp8_gemm_efficiency;
  // Optional "conv_efficiency", same layout; a unit without an entry is "nominal".
  std::map<MathUnit, ConvEfficiency> conv_efficiency;
  std::optional<AttentionThroughput> attention;
  // Optional "sustained_tflops": {"tensor_core": {dtype: figure}}: the most a matrix multiply
  // sustains in dtype when the GPU runs one GEMM after another at its power limit, measured
  // (e.g. the best of a shape sweep after warm-up). Short benchmarks at boost clock exceed it;
  // training runs GEMMs back to back for seconds, so no GEMM is priced faster than this.
  std::map<DType, Figure> sustained_tensor_core_tflops;
  // Optional "sustained_clock_fraction" (0-1]: the fraction of its short-benchmark throughput a
  // tensor-core kernel keeps when the GPU runs saturated at its power limit, as training keeps
  // it. Short benchmarks (the GEMM tables the analytical model is fitted on, the fused-attention
  // tables) run at the boost clock with the board below its power limit; back-to-back kernels
  // pin the board at the limit and the clock settles lower. Measured as the sustained over the
  // achievable matmul rate of one tool on one GPU (mamf-finder's MSMF / MAMF). Absent: 1.
  std::optional<Figure> sustained_clock_fraction;
  // Optional "hbm_streaming_bandwidth_GBps": what a kernel that reads and writes one stream
  // each (STREAM copy) measures; absent: the datasheet hbm_bandwidth_GBps.
  std::optional<Figure> hbm_streaming_bandwidth_GBps;

  // Bandwidth element-wise kernels stream at: the measured figure when the file has one.
  double streaming_bandwidth_GBps() const {
    return hbm_streaming_bandwidth_GBps ? hbm_streaming_bandwidth_GBps->value
                                        : hbm_bandwidth_GBps.value;
  }
  // sustained_clock_fraction's value, 1 when the file gives none.
  double tensor_core_clock_fraction() const {
    return sustained_clock_fraction ? sustained_clock_fraction->value : 1.0;
  }
  // The sustained tensor-core FLOP/s for dtype, or nullopt when the file gives none.
  std::optional<double> sustained_gemm_flops_per_s(DType dtype) const;

  // Peak in FLOP/s for dtype on unit, or nullopt when the unit does not support the dtype.
  std::optional<double> peak_flops_per_s(DType dtype, MathUnit unit) const;
  // The fastest unit for a matrix multiply in dtype: tensor cores when they take the dtype
  // (fp32 is never routed to tf32 silently: PyTorch defaults to full fp32 matmuls), else CUDA
  // cores. Throws RuntimeFailure when neither takes it.
  double gemm_peak_flops_per_s(DType dtype) const;
  // The unit gemm_peak_flops_per_s() picks for dtype.
  MathUnit gemm_unit(DType dtype) const;
  // CUDA-core peak for element-wise math in dtype; integer and unknown dtypes use fp32.
  double elementwise_peak_flops_per_s(DType dtype) const;
};

// Reads and checks one device file. Throws InputError(file, "/json/pointer", problem).
DeviceSpec load_device_file(const std::string& path);
// Parses JSON text (file is only used in error messages).
DeviceSpec parse_device_json(const std::string& text, const std::string& file);
// Every *.json of a folder, sorted by name.
std::vector<DeviceSpec> load_device_folder(const std::string& folder);
// The device whose name or an alias equals `name` (case-insensitive) in the folder, else the
// one device whose name or alias has the same io::name_key (`h100 sxm`); throws InputError
// naming the folder and the known names when none (or more than one by key) does.
DeviceSpec find_device(const std::string& folder, const std::string& name);

}  // namespace perfsim::devices
