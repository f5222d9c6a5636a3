#include "kernels/model_catalog.hpp"

#include "kernels/analytical_gemm.hpp"

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
      {"analytical-gemm", "mm, addmm, bmm, baddbmm, linear, matmul, attention matmuls",
       "m, n, k, batch, dtype; device tensor/CUDA-core peak per dtype, SM count, HBM bandwidth",
       "tile and wave quantization with " + analytical_gemm_parameters() +
           "; default until an MLP asset for the device exists"},
      {"mlp:<asset>", "GEMM kernels on the device the asset was trained on",
       "m, n, k, batch, dtype; an asset from `perfsim train` (--assets)",
       "seed 000 Sec. 4.3.2.2 and Table 4.2 (reduced grid), seed 003 Table 3 modulo one-hot "
       "features; trained on benchmark HDF5 /benchmarks/gemm, GMAE/MAPE stored with the asset"},
      {"+floor (suffix)", "any kernel whose model time is below the device floor",
       "device min_kernel_duration_us",
       "V100: measured, shortest kernel in the DLRM Kineto fixture (2 us); others: estimate"},
      {"unmodeled-floor", "ops no rule covers (listed in the coverage table)",
       "device min_kernel_duration_us", "placeholder: one kernel at the floor, never zero"},
  };
}

}  // namespace perfsim::kernels
