#include "devices/device_spec.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/json_document.hpp"
#include "io/name_key.hpp"
#include "perfsim/error.hpp"

namespace perfsim::devices {
namespace {

using nlohmann::json;

constexpr const char* kSchema = "perfsim-device/1";
constexpr double kFlopsPerTflop = 1e12;
constexpr double kMinFigure = 1e-6;
constexpr double kMaxFigure = 1e15;

// Walks one device document and reports the first problem with its JSON pointer.
class DeviceReader {
 public:
  DeviceReader(const json& root, std::string file) : root_(root), file_(std::move(file)) {}

  DeviceSpec read() {
    require_object(root_, "");
    check_keys(root_, "",
               {"schema", "name", "aliases", "architecture", "sm_count", "hbm_capacity_bytes",
                "hbm_bandwidth_GBps", "l2_size_bytes", "l2_bandwidth_GBps", "pcie_bandwidth_GBps",
                "min_kernel_duration_us", "peak_tflops", "gemm_efficiency", "conv_efficiency",
                "attention_tflops", "sustained_tflops", "sustained_clock_fraction",
                "hbm_streaming_bandwidth_GBps"});
    DeviceSpec spec;
    spec.file = file_;
    if (string_field(root_, "", "schema") != kSchema)
      fail("/schema", std::string("must be \"") + kSchema + "\"");
    spec.name = string_field(root_, "", "name");
    spec.architecture = string_field(root_, "", "architecture");
    if (root_.contains("aliases")) {
      const json& aliases = root_.at("aliases");
      if (!aliases.is_array())
        fail("/aliases", "must be an array of strings");
      for (std::size_t i = 0; i < aliases.size(); ++i) {
        if (!aliases[i].is_string())
          fail("/aliases/" + std::to_string(i), "must be a string");
        spec.aliases.push_back(aliases[i].get<std::string>());
      }
    }
    spec.sm_count = figure(root_, "", "sm_count");
    if (spec.sm_count.value != static_cast<double>(static_cast<long>(spec.sm_count.value)))
      fail("/sm_count/value", "must be a whole number");
    spec.hbm_capacity_bytes = figure(root_, "", "hbm_capacity_bytes");
    spec.hbm_bandwidth_GBps = figure(root_, "", "hbm_bandwidth_GBps");
    spec.l2_size_bytes = figure(root_, "", "l2_size_bytes");
    spec.l2_bandwidth_GBps = figure(root_, "", "l2_bandwidth_GBps");
    spec.pcie_bandwidth_GBps = figure(root_, "", "pcie_bandwidth_GBps");
    spec.min_kernel_duration_us = figure(root_, "", "min_kernel_duration_us");

    const json& peaks = member(root_, "", "peak_tflops");
    require_object(peaks, "/peak_tflops");
    check_keys(peaks, "/peak_tflops", {"tensor_core", "cuda_core"});
    spec.tensor_core_tflops = dtype_figures(peaks, "/peak_tflops", "tensor_core");
    spec.cuda_core_tflops = dtype_figures(peaks, "/peak_tflops", "cuda_core");
    if (!spec.cuda_core_tflops.contains(DType::kFloat32))
      fail("/peak_tflops/cuda_core", "must give fp32");
    if (root_.contains("gemm_efficiency")) {
      for_each_math_unit(
          "gemm_efficiency",
          [&](const json& entry, const std::string& here, MathUnit unit) {
            check_keys(entry, here, {"peak_fraction", "pipeline_depth_k", "fixed_latency_us"});
            spec.gemm_efficiency[unit] = read_gemm_efficiency(entry, here);
          },
          true);
      spec.fp8_gemm_efficiency = read_fp8_gemm_efficiency();
    }
    if (root_.contains("conv_efficiency"))
      for_each_math_unit(
          "conv_efficiency", [&](const json& entry, const std::string& here, MathUnit unit) {
            check_keys(entry, here,
                       {"peak_fraction", "pipeline_depth_k", "fixed_latency_us",
                        "fast_algorithm_flop_fraction", "max_split_k"});
            const GemmEfficiency gemm_terms = read_gemm_efficiency(entry, here);
            ConvEfficiency parsed{gemm_terms.peak_fraction, gemm_terms.pipeline_depth_k,
                                  gemm_terms.fixed_latency_us,
                                  figure(entry, here, "fast_algorithm_flop_fraction"),
                                  figure(entry, here, "max_split_k")};
            if (parsed.fast_algorithm_flop_fraction.value > 1.0)
              fail(here + "/fast_algorithm_flop_fraction/value", "must be at most 1");
            if (parsed.max_split_k.value < 1 || parsed.max_split_k.value > 1e4)
              fail(here + "/max_split_k/value", "must be in [1, 1e4]");
            spec.conv_efficiency[unit] = std::move(parsed);
          });
    if (root_.contains("attention_tflops"))
      spec.attention = read_attention();
    if (root_.contains("sustained_tflops")) {
      const json& sustained = root_.at("sustained_tflops");
      require_object(sustained, "/sustained_tflops");
      check_keys(sustained, "/sustained_tflops", {"tensor_core"});
      spec.sustained_tensor_core_tflops =
          dtype_figures(sustained, "/sustained_tflops", "tensor_core");
      for (const auto& [dtype, sustained_figure] : spec.sustained_tensor_core_tflops) {
        const auto peak = spec.tensor_core_tflops.find(dtype);
        if (peak == spec.tensor_core_tflops.end())
          fail("/sustained_tflops/tensor_core/" + std::string(dtype_name(dtype)),
               "no tensor-core peak for this dtype in /peak_tflops");
        if (sustained_figure.value > peak->second.value)
          fail("/sustained_tflops/tensor_core/" + std::string(dtype_name(dtype)) + "/value",
               "exceeds the tensor-core peak");
      }
    }
    if (root_.contains("sustained_clock_fraction")) {
      spec.sustained_clock_fraction = figure(root_, "", "sustained_clock_fraction");
      if (spec.sustained_clock_fraction->value > 1)
        fail("/sustained_clock_fraction/value",
             "must not exceed 1 (a GPU does not run faster saturated than in a burst)");
    }
    if (root_.contains("hbm_streaming_bandwidth_GBps")) {
      spec.hbm_streaming_bandwidth_GBps = figure(root_, "", "hbm_streaming_bandwidth_GBps");
      if (spec.hbm_streaming_bandwidth_GBps->value > spec.hbm_bandwidth_GBps.value)
        fail("/hbm_streaming_bandwidth_GBps/value", "exceeds hbm_bandwidth_GBps");
    }
    return spec;
  }

 private:
  AttentionThroughput read_attention() const {
    const std::string here = "/attention_tflops";
    const json& entry = root_.at("attention_tflops");
    require_object(entry, here);
    check_keys(entry, here,
               {"implementation", "head_dim", "dtypes", "sequence_lengths", "forward",
                "forward_causal", "backward", "backward_causal", "provenance", "source"});
    AttentionThroughput table;
    table.implementation = string_field(entry, here, "implementation");
    table.source = string_field(entry, here, "source");
    const std::string provenance = string_field(entry, here, "provenance");
    if (provenance == "measured")
      table.provenance = Provenance::kMeasured;
    else if (provenance == "estimate")
      table.provenance = Provenance::kEstimate;
    else
      fail(here + "/provenance",
           "must be \"measured\" or \"estimate\", not \"" + provenance + "\"");
    table.head_dim = numbers(entry, here, "head_dim", 1).front();
    const json& dtypes = member(entry, here, "dtypes");
    if (!dtypes.is_array() || dtypes.empty())
      fail(here + "/dtypes", "must be a non-empty array of dtype names");
    for (std::size_t i = 0; i < dtypes.size(); ++i) {
      std::optional<DType> dtype =
          dtypes[i].is_string() ? parse_dtype(dtypes[i].get<std::string>()) : std::nullopt;
      if (!dtype || *dtype == DType::kUnknown)
        fail(here + "/dtypes/" + std::to_string(i), "not a dtype (use fp16, bf16, fp8, ...)");
      table.dtypes.push_back(*dtype);
    }
    table.sequence_lengths = numbers(entry, here, "sequence_lengths", 0);
    for (std::size_t i = 1; i < table.sequence_lengths.size(); ++i)
      if (!(table.sequence_lengths[i] > table.sequence_lengths[i - 1]))
        fail(here + "/sequence_lengths/" + std::to_string(i), "must be ascending");
    const std::size_t points = table.sequence_lengths.size();
    table.forward_tflops = numbers(entry, here, "forward", points);
    table.forward_causal_tflops = numbers(entry, here, "forward_causal", points);
    table.backward_tflops = numbers(entry, here, "backward", points);
    if (entry.contains("backward_causal"))
      table.backward_causal_tflops = numbers(entry, here, "backward_causal", points);
    return table;
  }
  // A positive number (count 1) or an array of `count` positive numbers (0: any, at least 1).
  std::vector<double> numbers(const json& node, const std::string& pointer, const std::string& key,
                              std::size_t count) const {
    const std::string here = pointer + "/" + key;
    const json& value = member(node, pointer, key);
    std::vector<double> out;
    if (value.is_number()) {
      out.push_back(value.get<double>());
    } else if (value.is_array()) {
      for (const json& item : value)
        out.push_back(item.is_number() ? item.get<double>() : -1.0);
    } else {
      fail(here, "must be a number or an array of numbers");
    }
    if (out.empty() || (count > 0 && out.size() != count))
      fail(here, "must hold " + (count > 0 ? std::to_string(count) : std::string("at least 1")) +
                     " positive numbers");
    for (std::size_t i = 0; i < out.size(); ++i)
      if (!(out[i] >= kMinFigure && out[i] <= kMaxFigure))
        fail(value.is_array() ? here + "/" + std::to_string(i) : here,
             "must be a number in [1e-06, 1e+15]");
    return out;
  }

  // Calls `read(entry, pointer, unit)` for each math unit that `key` ("gemm_efficiency" or
  // "conv_efficiency") gives an entry for.
  template <typename Read>
  void for_each_math_unit(const std::string& key, Read read, bool allow_fp8_entry = false) const {
    const json& efficiency = root_.at(key);
    require_object(efficiency, "/" + key);
    if (allow_fp8_entry)
      check_keys(efficiency, "/" + key, {"tensor_core", "cuda_core", "tensor_core_fp8"});
    else
      check_keys(efficiency, "/" + key, {"tensor_core", "cuda_core"});
    for (const auto& [unit_name, unit] : {std::pair{"tensor_core", MathUnit::kTensorCore},
                                          std::pair{"cuda_core", MathUnit::kCudaCore}}) {
      if (!efficiency.contains(unit_name))
        continue;
      const std::string here = "/" + key + "/" + unit_name;
      const json& entry = efficiency.at(unit_name);
      require_object(entry, here);
      read(entry, here, unit);
    }
  }
  std::optional<Fp8GemmEfficiency> read_fp8_gemm_efficiency() const {
    const json& efficiency = root_.at("gemm_efficiency");
    if (!efficiency.contains("tensor_core_fp8"))
      return std::nullopt;
    const std::string here = "/gemm_efficiency/tensor_core_fp8";
    const json& entry = efficiency.at("tensor_core_fp8");
    require_object(entry, here);
    check_keys(
        entry, here,
        {"peak_fraction", "pipeline_depth_k", "fixed_latency_us", "split_accumulator_time_factor"});
    Fp8GemmEfficiency parsed{read_gemm_efficiency(entry, here),
                             Figure{1.0, Provenance::kEstimate, ""}};
    if (entry.contains("split_accumulator_time_factor"))
      parsed.split_accumulator_time_factor = figure(entry, here, "split_accumulator_time_factor");
    if (parsed.split_accumulator_time_factor.value < 1.0 ||
        parsed.split_accumulator_time_factor.value > 4.0)
      fail(here + "/split_accumulator_time_factor/value", "must be in [1, 4]");
    return parsed;
  }
  // The terms GEMM and convolution efficiencies share; fixed_latency_us is optional (0).
  GemmEfficiency read_gemm_efficiency(const json& entry, const std::string& here) const {
    GemmEfficiency parsed{figure(entry, here, "peak_fraction"),
                          figure(entry, here, "pipeline_depth_k"), Figure{}};
    if (entry.contains("fixed_latency_us"))
      parsed.fixed_latency_us = figure(entry, here, "fixed_latency_us");
    if (parsed.peak_fraction.value > 1.0)
      fail(here + "/peak_fraction/value", "must be at most 1");
    if (parsed.pipeline_depth_k.value > 1e6)
      fail(here + "/pipeline_depth_k/value", "must be at most 1e6");
    if (parsed.fixed_latency_us.value > 1e3)
      fail(here + "/fixed_latency_us/value", "must be at most 1000");
    return parsed;
  }
  [[noreturn]] void fail(const std::string& pointer, const std::string& problem) const {
    throw InputError(file_, pointer.empty() ? "/" : pointer, problem);
  }
  void require_object(const json& node, const std::string& pointer) const {
    if (!node.is_object())
      fail(pointer, "must be an object");
  }
  void check_keys(const json& node, const std::string& pointer,
                  std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : node.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        fail(pointer + "/" + key, "unknown field");
    }
  }
  const json& member(const json& node, const std::string& pointer, const std::string& key) const {
    if (!node.contains(key))
      fail(pointer + "/" + key, "missing field");
    return node.at(key);
  }
  std::string string_field(const json& node, const std::string& pointer,
                           const std::string& key) const {
    const json& value = member(node, pointer, key);
    if (!value.is_string() || value.get<std::string>().empty())
      fail(pointer + "/" + key, "must be a non-empty string");
    return value.get<std::string>();
  }
  Figure figure(const json& node, const std::string& pointer, const std::string& key) const {
    const std::string here = pointer + "/" + key;
    const json& value = member(node, pointer, key);
    require_object(value, here);
    check_keys(value, here, {"value", "provenance", "source"});
    Figure out;
    const json& number = member(value, here, "value");
    if (!number.is_number() || !(number.get<double>() > 0))
      fail(here + "/value", "must be a positive number");
    // Bounded so that times derived from a figure (bytes / bandwidth, flops / peak) stay
    // finite and printable: 1e-6 TFLOP/s or 1e15 GB/s are typos, not devices.
    if (number.get<double>() < kMinFigure || number.get<double>() > kMaxFigure)
      fail(here + "/value", number.dump() + " is outside [1e-06, 1e+15]");
    out.value = number.get<double>();
    const std::string provenance = string_field(value, here, "provenance");
    if (provenance == "vendor-spec")
      out.provenance = Provenance::kVendorSpec;
    else if (provenance == "measured")
      out.provenance = Provenance::kMeasured;
    else if (provenance == "estimate")
      out.provenance = Provenance::kEstimate;
    else
      fail(here + "/provenance",
           "must be \"vendor-spec\", \"measured\" or \"estimate\", not \"" + provenance + "\"");
    out.source = string_field(value, here, "source");
    return out;
  }
  std::map<DType, Figure> dtype_figures(const json& node, const std::string& pointer,
                                        const std::string& key) const {
    const std::string here = pointer + "/" + key;
    const json& table = member(node, pointer, key);
    require_object(table, here);
    std::map<DType, Figure> out;
    for (const auto& [name, value] : table.items()) {
      std::optional<DType> dtype = parse_dtype(name);
      if (!dtype || *dtype == DType::kUnknown)
        fail(here + "/" + name, "not a dtype (use fp64, fp32, tf32, fp16, bf16, fp8)");
      out[*dtype] = figure(table, here, name);
    }
    if (out.empty())
      fail(here, "must give at least one dtype");
    return out;
  }

  const json& root_;
  std::string file_;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

std::string_view provenance_name(Provenance provenance) {
  switch (provenance) {
    case Provenance::kVendorSpec:
      return "vendor-spec";
    case Provenance::kMeasured:
      return "measured";
    case Provenance::kEstimate:
      return "estimate";
  }
  return "estimate";
}

std::optional<double> DeviceSpec::peak_flops_per_s(DType dtype, MathUnit unit) const {
  const auto& table = unit == MathUnit::kTensorCore ? tensor_core_tflops : cuda_core_tflops;
  auto it = table.find(dtype);
  if (it == table.end())
    return std::nullopt;
  return it->second.value * kFlopsPerTflop;
}

double DeviceSpec::gemm_peak_flops_per_s(DType dtype) const {
  if (dtype != DType::kFloat32) {
    if (auto peak = peak_flops_per_s(dtype, MathUnit::kTensorCore))
      return *peak;
  }
  const DType cuda_dtype = dtype == DType::kTFloat32 ? DType::kFloat32 : dtype;
  if (auto peak = peak_flops_per_s(cuda_dtype, MathUnit::kCudaCore))
    return *peak;
  throw RuntimeFailure(file + ": device " + name + " has no peak for a " +
                       std::string(dtype_name(dtype)) + " matrix multiply");
}

MathUnit DeviceSpec::gemm_unit(DType dtype) const {
  if (dtype != DType::kFloat32 && peak_flops_per_s(dtype, MathUnit::kTensorCore))
    return MathUnit::kTensorCore;
  return MathUnit::kCudaCore;
}

std::optional<double> DeviceSpec::sustained_gemm_flops_per_s(DType dtype) const {
  const auto it = sustained_tensor_core_tflops.find(dtype);
  if (it == sustained_tensor_core_tflops.end())
    return std::nullopt;
  return it->second.value * kFlopsPerTflop;
}

double DeviceSpec::elementwise_peak_flops_per_s(DType dtype) const {
  if (auto peak = peak_flops_per_s(dtype, MathUnit::kCudaCore))
    return *peak;
  return *peak_flops_per_s(DType::kFloat32, MathUnit::kCudaCore);
}

DeviceSpec parse_device_json(const std::string& text, const std::string& file) {
  const json root = io::parse_json_document(text, file);
  return DeviceReader(root, file).read();
}

DeviceSpec load_device_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw InputError(path, "", "cannot open device file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_device_json(text.str(), path);
}

std::vector<DeviceSpec> load_device_folder(const std::string& folder) {
  std::vector<std::string> paths;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.path().extension() == ".json")
      paths.push_back(entry.path().string());
  }
  if (error)
    throw InputError(folder, "", "cannot list device folder: " + error.message());
  std::sort(paths.begin(), paths.end());
  std::vector<DeviceSpec> devices;
  for (const std::string& path : paths)
    devices.push_back(load_device_file(path));
  return devices;
}

DeviceSpec find_device(const std::string& folder, const std::string& name) {
  std::string known;
  const std::string wanted = lower(name);
  const std::string key = io::name_key(name);
  std::vector<DeviceSpec> spelled;  // named up to case, spaces and punctuation (`h100 sxm`)
  for (DeviceSpec& device : load_device_folder(folder)) {
    if (lower(device.name) == wanted)
      return device;
    bool same_key = !key.empty() && io::name_key(device.name) == key;
    for (const std::string& alias : device.aliases) {
      if (lower(alias) == wanted)
        return device;
      same_key = same_key || (!key.empty() && io::name_key(alias) == key);
    }
    if (same_key)
      spelled.push_back(device);
    if (!known.empty())
      known.append(", ");
    known.append(device.name);
  }
  if (spelled.size() == 1)
    return spelled.front();
  throw InputError(folder, name, "no device file with this name or alias (known: " + known + ")");
}

}  // namespace perfsim::devices
