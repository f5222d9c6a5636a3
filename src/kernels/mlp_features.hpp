#pragma once
// The input features of an MLP kernel model: log2 of each size (seed 000 Sec. 4.3.2.2), the
// one-hot remainder of selected sizes (seed 003 Sec. 4.3, Table 3: bsz % 8, L % 8, M % 8,
// N % 8 for batched matmul), and a one-hot dtype (seed 003; seed 004 one-hot op type).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "perfsim/dtype.hpp"

namespace perfsim::kernels {

struct SizeFeature {
  std::string name;         // "m", "n", "k", "batch", ...
  std::int64_t modulo = 0;  // 0: log2 only; d > 0: also onehot(size % d)
  bool log_scale = true;    // false: the value as it is (fractions such as reuse factors)
};

struct FeatureDefinition {
  std::vector<SizeFeature> sizes;
  std::vector<DType> dtypes;  // one-hot over these; empty: no dtype feature

  std::size_t width() const;
  // One row of features. sizes.size() values are expected (values below 1 count as 1).
  Eigen::RowVectorXd encode(std::span<const double> size_values, DType dtype) const;
  Eigen::MatrixXd encode_all(const std::vector<std::vector<double>>& size_rows,
                             const std::vector<DType>& dtypes_per_row) const;
};

// GEMM features: m, n, k, batch with `modulo` remainders (0 disables the augmentation).
FeatureDefinition gemm_features(std::int64_t modulo, std::vector<DType> dtypes);
// Embedding lookup with reuse factors (seed 001 Sec. IV-C): log2 of B, E, L, D, then the 17
// reuse-factor bins as fractions (kernels/reuse_factor.hpp), in that order.
FeatureDefinition embedding_features();

}  // namespace perfsim::kernels
