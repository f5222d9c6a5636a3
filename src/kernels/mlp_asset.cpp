#include "kernels/mlp_asset.hpp"

#include <cmath>
#include <sstream>

#include "hdf5/column_table.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

constexpr const char* kRoot = "/kernel_models";

std::string group_of(const std::string& name) {
  return std::string(kRoot) + "/" + name;
}

std::string join_dtypes(const std::vector<DType>& dtypes) {
  std::string out;
  for (DType dtype : dtypes) {
    if (!out.empty())
      out.push_back(',');
    out.append(dtype_name(dtype));
  }
  return out;
}

std::vector<DType> split_dtypes(const std::string& text, const std::string& file,
                                const std::string& where) {
  std::vector<DType> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto dtype = parse_dtype(item);
    if (!dtype)
      throw InputError(file, where + "/dtypes", "not a dtype: " + item);
    out.push_back(*dtype);
  }
  return out;
}

const std::string& attribute(const h5::ColumnTable& table, const std::string& key,
                             const std::string& file, const std::string& where) {
  auto it = table.attributes.find(key);
  if (it == table.attributes.end())
    throw InputError(file, where, "missing attribute " + key);
  return it->second;
}

std::string exact(double value) {  // 17 significant digits round-trip a double
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

double MlpKernelAsset::predict_us(std::span<const double> sizes, DType dtype) const {
  return std::exp2(mlp.predict(features.encode(sizes, dtype))[0]);
}

void write_mlp_asset(const std::string& file_path, const MlpKernelAsset& asset) {
  // Every table of the asset lands together or not at all.
  h5::OutputFile output(file_path, /*truncate_file=*/false);
  const std::string group = group_of(asset.name);
  h5::ColumnTable features;
  std::vector<std::string> names;
  std::vector<std::int64_t> modulos;
  std::vector<std::int64_t> log_scale;
  for (const SizeFeature& size : asset.features.sizes) {
    names.push_back(size.name);
    modulos.push_back(size.modulo);
    log_scale.push_back(size.log_scale ? 1 : 0);
  }
  features.add("name", names);
  features.add("modulo", modulos);
  features.add("log2", log_scale);
  features.attributes = {{"kernel_kind", asset.kernel_kind},
                         {"device", asset.device},
                         {"dtypes", join_dtypes(asset.features.dtypes)},
                         {"layers", std::to_string(asset.mlp.layers.size())},
                         {"input_transform", "log2(size), onehot(size % modulo), onehot(dtype)"},
                         {"target", "log2(time_us)"},
                         {"training_source", asset.training_source},
                         {"gmae_pct", exact(asset.gmae_pct)},
                         {"mape_pct", exact(asset.mape_pct)}};
  output.write_table(group + "/features", features);

  h5::ColumnTable normalization;
  normalization.add("input_mean",
                    std::vector<double>(asset.mlp.input_mean.begin(), asset.mlp.input_mean.end()));
  normalization.add("input_scale", std::vector<double>(asset.mlp.input_scale.begin(),
                                                       asset.mlp.input_scale.end()));
  output.write_table(group + "/normalization", normalization);

  h5::ColumnTable target;
  target.add("mean", std::vector<double>{asset.mlp.target_mean});
  target.add("scale", std::vector<double>{asset.mlp.target_scale});
  output.write_table(group + "/target", target);

  for (std::size_t i = 0; i < asset.mlp.layers.size(); ++i) {
    const MlpLayer& layer = asset.mlp.layers[i];
    std::vector<double> values;
    values.reserve(static_cast<std::size_t>(layer.weights.size() + layer.bias.size()));
    for (Eigen::Index r = 0; r < layer.weights.rows(); ++r)
      for (Eigen::Index c = 0; c < layer.weights.cols(); ++c)
        values.push_back(layer.weights(r, c));
    values.insert(values.end(), layer.bias.begin(), layer.bias.end());
    h5::ColumnTable table;
    table.add("values", std::move(values));
    table.attributes = {{"rows", std::to_string(layer.weights.rows())},
                        {"cols", std::to_string(layer.weights.cols())}};
    output.write_table(group + "/layer_" + std::to_string(i), table);
  }
  output.commit();
}

MlpKernelAsset read_mlp_asset(const std::string& file_path, const std::string& name) {
  const std::string group = group_of(name);
  if (!h5::group_exists(file_path, group))
    throw InputError(file_path, group, "no such kernel model asset");
  MlpKernelAsset asset;
  asset.name = name;
  const std::string where = group + "/features";
  const h5::ColumnTable features = h5::read_table(file_path, where);
  asset.kernel_kind = attribute(features, "kernel_kind", file_path, where);
  asset.device = attribute(features, "device", file_path, where);
  asset.training_source = attribute(features, "training_source", file_path, where);
  asset.gmae_pct = std::stod(attribute(features, "gmae_pct", file_path, where));
  asset.mape_pct = std::stod(attribute(features, "mape_pct", file_path, where));
  asset.features.dtypes =
      split_dtypes(attribute(features, "dtypes", file_path, where), file_path, where);
  const auto& names = features.strings("name");
  const auto& modulos = features.integers("modulo");
  const auto& log_scale = features.integers("log2");
  for (std::size_t i = 0; i < names.size(); ++i)
    asset.features.sizes.push_back({names[i], modulos[i], log_scale[i] != 0});

  const h5::ColumnTable normalization = h5::read_table(file_path, group + "/normalization");
  const auto& mean = normalization.doubles("input_mean");
  const auto& scale = normalization.doubles("input_scale");
  asset.mlp.input_mean =
      Eigen::Map<const Eigen::VectorXd>(mean.data(), static_cast<Eigen::Index>(mean.size()));
  asset.mlp.input_scale =
      Eigen::Map<const Eigen::VectorXd>(scale.data(), static_cast<Eigen::Index>(scale.size()));
  if (asset.mlp.input_count() != asset.features.width())
    throw InputError(file_path, group + "/normalization",
                     "has " + std::to_string(mean.size()) + " features, the feature definition " +
                         std::to_string(asset.features.width()));
  const h5::ColumnTable target = h5::read_table(file_path, group + "/target");
  asset.mlp.target_mean = target.doubles("mean").at(0);
  asset.mlp.target_scale = target.doubles("scale").at(0);

  const int layer_count = std::stoi(attribute(features, "layers", file_path, where));
  Eigen::Index expected_cols = static_cast<Eigen::Index>(asset.features.width());
  for (int i = 0; i < layer_count; ++i) {
    const std::string layer_group = group + "/layer_" + std::to_string(i);
    const h5::ColumnTable table = h5::read_table(file_path, layer_group);
    const Eigen::Index rows = std::stol(attribute(table, "rows", file_path, layer_group));
    const Eigen::Index cols = std::stol(attribute(table, "cols", file_path, layer_group));
    const auto& values = table.doubles("values");
    if (cols != expected_cols || static_cast<Eigen::Index>(values.size()) != rows * cols + rows)
      throw InputError(file_path, layer_group, "layer shape does not chain with the previous one");
    MlpLayer layer{Eigen::MatrixXd(rows, cols), Eigen::VectorXd(rows)};
    std::size_t at = 0;
    for (Eigen::Index r = 0; r < rows; ++r)
      for (Eigen::Index c = 0; c < cols; ++c)
        layer.weights(r, c) = values[at++];
    for (Eigen::Index r = 0; r < rows; ++r)
      layer.bias[r] = values[at++];
    asset.mlp.layers.push_back(std::move(layer));
    expected_cols = rows;
  }
  if (expected_cols != 1)
    throw InputError(file_path, group, "the last layer must have one output");
  return asset;
}

std::vector<MlpKernelAsset> read_all_mlp_assets(const std::string& file_path) {
  std::vector<MlpKernelAsset> assets;
  for (const std::string& name : list_mlp_assets(file_path))
    assets.push_back(read_mlp_asset(file_path, name));
  return assets;
}

std::vector<std::string> list_mlp_assets(const std::string& file_path) {
  if (!h5::group_exists(file_path, kRoot))
    return {};
  return h5::list_groups(file_path, kRoot);
}

}  // namespace perfsim::kernels
