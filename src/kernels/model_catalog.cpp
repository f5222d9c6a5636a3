#include "kernels/model_catalog.hpp"

#include "kernels/analytical_gemm.hpp"
#include "kernels/conv_model.hpp"
#include "kernels/memory_bound_model.hpp"

namespace perfsim::kernels {

std::vector<ModelDescription> kernel_model_catalog() {
  return {
      {"roofline",
       "element-wise, reduction, normalization, dropout, softmax, device copies, concat, fill",
       "tensor shapes and dtypes; device HBM bandwidth and CUDA-core peak per dtype",
       "seed 000 Sec. 4.3.2.1.2 (t = max(FLOP/peak, bytes/BW)); per-op flop counts in "
       "src/kernels/op_kernel_registry.cpp"},
      {"pcie-transfer", "host <-> device copies (aten::copy_ / to between cpu and cuda)",
       "bytes; device pcie_bandwidth_GBps", "device file (PCIe generation x16, one direction)"},
      {"embedding-heuristic", "embedding_bag, embedding, FBGEMM batched lookups (fwd and bwd)",
       "B, E, T, L, D from shapes; device SM count, L2 size and bandwidth, HBM bandwidth",
       "seed 000 Sec. 4.3.2.1.1 (per-warp traffic, L2 hit rate p = C(cached rows, L) / C(E, L))"},
      {"attention-table(<implementation>)",
       "fused (flash) attention forward and backward on a device with an attention_tflops table",
       "batch x heads, query and key lengths, head dim, causal mask (the op's is_causal), dtype",
       "measured throughput by mask, direction and length (log-linear between the measured "
       "lengths); a causal mask halves the work; \"+sustained-clock\": times the device's "
       "sustained_clock_fraction (the tables are short benchmarks at the boost clock); "
       "src/kernels/attention_model.hpp"},
      {"analytical-gemm", "mm, addmm, bmm, baddbmm, linear, matmul, attention matmuls",
       "m, n, k, batch, dtype; device tensor/CUDA-core peak per dtype, SM count, HBM bandwidth",
       "tile and wave quantization with " + analytical_gemm_parameters() +
           "; default until an MLP asset for the device exists; \"(fitted)\" where the "
           "device file's efficiency for the dtype was fitted on measured GEMMs (H100/H200 bf16: "
           "OpenXLA's H100 table, tests/data/kernels/xla-h100; fp8: public H100/H800 tables, "
           "tests/data/kernels/hopper-gemm-public); \"+sustained-clock\": tensor-core main "
           "loop at the device's sustained_clock_fraction of the fitted (boost-clock) rate"},
      {"conv-implicit-gemm(fitted|nominal)",
       "convolution forward, backward data, backward filter (cudnn_convolution, convolution, "
       "conv2d, convolution_backward)",
       "input, weight and output shapes (execution traces; Kineto lacks the forward's output), "
       "dtype; device peak per unit, SM count, HBM bandwidth",
       conv_model_parameters() +
           "; fitted on DeepBench V100 convolutions (`perfsim calibrate conv`), V100 only"},
      {"memory-bound(nominal)",
       "batch-norm forward and backward, max and average pooling forward and backward",
       "tensor shapes and dtypes; device HBM bandwidth and min_kernel_duration_us",
       "launch latency (the device's kernel floor) + bytes / (" +
           std::to_string(kAchievableHbmFraction).substr(0, 4) +
           " x HBM bandwidth); bytes per op in src/kernels/cnn_op_rules.cpp; no measured table"},
      {"mlp:<asset>", "GEMM kernels on the device the asset was trained on",
       "m, n, k, batch, dtype; an asset from `perfsim train` (--assets)",
       "seed 000 Sec. 4.3.2.2 and Table 4.2 (reduced grid), seed 003 Table 3 modulo one-hot "
       "features; trained on benchmark HDF5 /benchmarks/gemm, GMAE/MAPE stored with the asset"},
      {"mlp:<asset> (embedding)",
       "embedding_bag, embedding, FBGEMM batched lookups on the device the asset was trained on",
       "per table log2 B, E, L, D and the batch's 17 reuse-factor bins, weight dtype; times T "
       "tables; an embedding_forward/_backward asset from `perfsim train`",
       "seed 001 Sec. IV-C; trained on benchmark HDF5 /benchmarks/embedding. Traces carry no "
       "indices: then uniform indices are assumed (Poisson(B L / E) lookups per row) and the "
       "model name gets \"+uniform-reuse\""},
      {"+floor (suffix)", "any kernel whose model time is below the device floor",
       "device min_kernel_duration_us",
       "V100: measured, shortest kernel in the DLRM Kineto fixture (2 us); others: estimate"},
      {"unmodeled-floor", "ops no rule covers (listed in the coverage table)",
       "device min_kernel_duration_us", "placeholder: one kernel at the floor, never zero"},
  };
}

}  // namespace perfsim::kernels
