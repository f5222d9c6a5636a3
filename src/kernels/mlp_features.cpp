#include "kernels/mlp_features.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/reuse_factor.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {

std::size_t FeatureDefinition::width() const {
  std::size_t width = dtypes.size();
  for (const SizeFeature& size : sizes)
    width += 1 + static_cast<std::size_t>(std::max<std::int64_t>(0, size.modulo));
  return width;
}

Eigen::RowVectorXd FeatureDefinition::encode(std::span<const double> size_values,
                                             DType dtype) const {
  if (size_values.size() != sizes.size())
    throw RuntimeFailure("mlp features: expected " + std::to_string(sizes.size()) + " sizes");
  Eigen::RowVectorXd row = Eigen::RowVectorXd::Zero(static_cast<Eigen::Index>(width()));
  Eigen::Index column = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (!sizes[i].log_scale) {
      row[column++] = size_values[i];
      continue;
    }
    const double value = std::max(1.0, size_values[i]);
    row[column++] = std::log2(value);
    if (sizes[i].modulo > 0) {
      const auto remainder = static_cast<Eigen::Index>(
          static_cast<std::int64_t>(std::llround(value)) % sizes[i].modulo);
      row[column + remainder] = 1.0;
      column += sizes[i].modulo;
    }
  }
  for (DType known : dtypes)
    row[column++] = known == dtype ? 1.0 : 0.0;
  return row;
}

Eigen::MatrixXd FeatureDefinition::encode_all(const std::vector<std::vector<double>>& size_rows,
                                              const std::vector<DType>& dtypes_per_row) const {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(size_rows.size()),
                      static_cast<Eigen::Index>(width()));
  for (std::size_t r = 0; r < size_rows.size(); ++r)
    out.row(static_cast<Eigen::Index>(r)) =
        encode(size_rows[r], dtypes_per_row.empty() ? DType::kUnknown : dtypes_per_row[r]);
  return out;
}

FeatureDefinition gemm_features(std::int64_t modulo, std::vector<DType> dtypes) {
  FeatureDefinition definition;
  for (const char* name : {"m", "n", "k", "batch"})
    definition.sizes.push_back({name, modulo});
  definition.dtypes = std::move(dtypes);
  return definition;
}

}  // namespace perfsim::kernels

namespace perfsim::kernels {

FeatureDefinition embedding_features() {
  FeatureDefinition definition;
  for (const char* name : {"B", "E", "L", "D"})
    definition.sizes.push_back({name, 0, true});
  for (std::size_t bin = 0; bin < kReuseFactorBins; ++bin)
    definition.sizes.push_back({"rf" + std::to_string(bin), 0, false});
  return definition;
}

}  // namespace perfsim::kernels
