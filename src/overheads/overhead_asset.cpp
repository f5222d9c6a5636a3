#include "overheads/overhead_asset.hpp"

#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/atomic_file.hpp"
#include "io/input_file.hpp"
#include "io/json_document.hpp"
#include "io/json_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::overheads {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "perfsim-host-overheads";
constexpr int kVersion = 1;

// The file's records, with field names (the vocabulary types serialize positionally).
struct StatsRecord {
  double mean_us = 0;
  double stddev_us = 0;
  std::int64_t count = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(mean_us), CEREAL_NVP(stddev_us), CEREAL_NVP(count));
  }
};

struct OpRecord {
  std::string op;
  StatsRecord t1, t2, t3, t5;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(op), CEREAL_NVP(t1), CEREAL_NVP(t2), CEREAL_NVP(t3), CEREAL_NVP(t5));
  }
};

struct RuntimeRecord {
  std::string runtime_api;
  StatsRecord t4;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(runtime_api), CEREAL_NVP(t4));
  }
};

struct LaunchRecord {
  double kernel_gap_us = 0;
  double launch_fraction_of_t4 = 0;
  double profiler_cpu_overhead_us = 0;
  double profiler_gpu_overhead_us = 0;
  bool remove_iqr_outliers = true;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(kernel_gap_us), CEREAL_NVP(launch_fraction_of_t4),
       CEREAL_NVP(profiler_cpu_overhead_us), CEREAL_NVP(profiler_gpu_overhead_us),
       CEREAL_NVP(remove_iqr_outliers));
  }
};

struct PooledRecord {
  StatsRecord t1, t2, t3, t5;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(t1), CEREAL_NVP(t2), CEREAL_NVP(t3), CEREAL_NVP(t5));
  }
};

struct AssetRecord {
  std::string format = kFormat;
  int version = kVersion;
  std::int64_t source_traces = 0;
  LaunchRecord launch;
  PooledRecord all_ops;
  StatsRecord t4_all;
  std::vector<OpRecord> per_op;
  std::vector<RuntimeRecord> t4_per_runtime;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(format), CEREAL_NVP(version), CEREAL_NVP(source_traces), CEREAL_NVP(launch),
       CEREAL_NVP(all_ops), CEREAL_NVP(t4_all), CEREAL_NVP(per_op), CEREAL_NVP(t4_per_runtime));
  }
};

StatsRecord to_record(const OverheadStats& stats) {
  return {stats.mean_us, stats.stddev_us, stats.count};
}

AssetRecord to_record(const HostOverheads& overheads) {
  AssetRecord record;
  record.source_traces = overheads.source_traces;
  const LaunchParameters& launch = overheads.launch;
  record.launch = {launch.kernel_gap_us, launch.launch_fraction_of_t4,
                   launch.profiler_cpu_overhead_us, launch.profiler_gpu_overhead_us,
                   launch.remove_iqr_outliers};
  const OpOverheads& pooled = overheads.all_ops;
  record.all_ops = {to_record(pooled.t1), to_record(pooled.t2), to_record(pooled.t3),
                    to_record(pooled.t5)};
  record.t4_all = to_record(overheads.t4_all);
  for (const auto& [name, op] : overheads.per_op) {
    record.per_op.push_back(
        {name, to_record(op.t1), to_record(op.t2), to_record(op.t3), to_record(op.t5)});
  }
  for (const auto& [api, stats] : overheads.t4_per_runtime)
    record.t4_per_runtime.push_back({api, to_record(stats)});
  return record;
}

// The reader walks the document itself: cereal's JSON archive checks value types with
// RAPIDJSON_ASSERT, which is a no-op in release builds, so a string where a number belongs was
// read as garbage (issue 20). Every field is checked for type, finiteness and range here.
class AssetReader {
 public:
  explicit AssetReader(std::string source) : source_(std::move(source)) {}

  HostOverheads read(const json& root) const {
    if (!root.contains("host_overheads"))
      throw InputError(source_, "host_overheads",
                       "not a host-overhead asset: no \"host_overheads\" object");
    const json& asset = root.at("host_overheads");
    require_object(asset, "host_overheads");
    const std::string format = text(asset, "host_overheads", "format");
    if (format != kFormat)
      throw InputError(source_, "host_overheads.format",
                       "is \"" + format + "\", expected \"" + kFormat + "\"");
    const std::int64_t version = io::json_integer(member(asset, "host_overheads", "version"), 0,
                                                  1'000'000, source_, "host_overheads.version");
    if (version != kVersion)
      throw InputError(source_, "host_overheads.version",
                       "is " + std::to_string(version) + ", this build reads version " +
                           std::to_string(kVersion));
    HostOverheads overheads;
    overheads.source_traces =
        io::json_integer(member(asset, "host_overheads", "source_traces"), 0, kMaxSourceTraces,
                         source_, "host_overheads.source_traces");
    overheads.launch = launch(member(asset, "host_overheads", "launch"), "host_overheads.launch");
    overheads.all_ops =
        op_overheads(member(asset, "host_overheads", "all_ops"), "host_overheads.all_ops");
    overheads.t4_all = stats(member(asset, "host_overheads", "t4_all"), "host_overheads.t4_all");
    const json& per_op = array(asset, "host_overheads", "per_op");
    for (std::size_t i = 0; i < per_op.size(); ++i) {
      std::string location = "host_overheads.per_op[" + std::to_string(i) + "]";
      require_object(per_op[i], location);
      const std::string op = text(per_op[i], location, "op");
      location += " (\"" + op + "\")";
      if (!overheads.per_op.emplace(op, op_overheads(per_op[i], location)).second)
        throw InputError(source_, location, "op listed twice");
    }
    const json& runtimes = array(asset, "host_overheads", "t4_per_runtime");
    for (std::size_t i = 0; i < runtimes.size(); ++i) {
      std::string location = "host_overheads.t4_per_runtime[" + std::to_string(i) + "]";
      require_object(runtimes[i], location);
      const std::string api = text(runtimes[i], location, "runtime_api");
      location += " (\"" + api + "\")";
      if (!overheads.t4_per_runtime
               .emplace(api, stats(member(runtimes[i], location, "t4"), location + ".t4"))
               .second)
        throw InputError(source_, location, "runtime API listed twice");
    }
    return overheads;
  }

 private:
  // More traces than any profiling campaign merges; keeps the count exact in a double.
  static constexpr std::int64_t kMaxSourceTraces = 1'000'000'000;

  void require_object(const json& value, const std::string& location) const {
    if (!value.is_object())
      throw InputError(source_, location.empty() ? "/" : location,
                       std::string("must be an object, got ") + value.type_name());
  }
  const json& member(const json& object, const std::string& location,
                     const std::string& key) const {
    require_object(object, location);
    const std::string here = location.empty() ? key : location + "." + key;
    if (!object.contains(key))
      throw InputError(source_, here, "missing field");
    return object.at(key);
  }
  const json& array(const json& object, const std::string& location, const std::string& key) const {
    const json& value = member(object, location, key);
    if (!value.is_array())
      throw InputError(source_, location + "." + key, "must be an array");
    return value;
  }
  std::string text(const json& object, const std::string& location, const std::string& key) const {
    const json& value = member(object, location, key);
    if (!value.is_string())
      throw InputError(source_, location + "." + key, "must be a string, got " + value.dump());
    return value.get<std::string>();
  }
  double duration(const json& object, const std::string& location, const std::string& key) const {
    return io::json_real(member(object, location, key), 0.0, io::kMaxDurationUs, source_,
                         location + "." + key);
  }

  OverheadStats stats(const json& record, const std::string& location) const {
    OverheadStats result;
    result.mean_us = duration(record, location, "mean_us");
    result.stddev_us = duration(record, location, "stddev_us");
    result.count = io::json_integer(member(record, location, "count"), 0, io::kMaxExactCount,
                                    source_, location + ".count");
    return result;
  }

  OpOverheads op_overheads(const json& record, const std::string& location) const {
    return {stats(member(record, location, "t1"), location + ".t1"),
            stats(member(record, location, "t2"), location + ".t2"),
            stats(member(record, location, "t3"), location + ".t3"),
            stats(member(record, location, "t5"), location + ".t5")};
  }

  LaunchParameters launch(const json& record, const std::string& location) const {
    LaunchParameters result;  // launch_queue_depth: a device property, not measured
    result.kernel_gap_us = duration(record, location, "kernel_gap_us");
    result.launch_fraction_of_t4 =
        io::json_real(member(record, location, "launch_fraction_of_t4"), 0.0, 1.0, source_,
                      location + ".launch_fraction_of_t4");
    result.profiler_cpu_overhead_us = duration(record, location, "profiler_cpu_overhead_us");
    result.profiler_gpu_overhead_us = duration(record, location, "profiler_gpu_overhead_us");
    const json& remove = member(record, location, "remove_iqr_outliers");
    if (!remove.is_boolean())
      throw InputError(source_, location + ".remove_iqr_outliers",
                       "must be true or false, got " + remove.dump());
    result.remove_iqr_outliers = remove.get<bool>();
    return result;
  }

  std::string source_;
};

}  // namespace

std::string host_overheads_to_json(const HostOverheads& overheads) {
  std::ostringstream out;
  {
    cereal::JSONOutputArchive archive(out);
    AssetRecord record = to_record(overheads);
    archive(cereal::make_nvp("host_overheads", record));
  }
  out << "\n";
  return out.str();
}

HostOverheads host_overheads_from_json(const std::string& json_text, const std::string& source) {
  const json root = io::parse_json_document(json_text, source);
  if (!root.is_object())
    throw InputError(source, "", "a host-overhead asset is a JSON object");
  return AssetReader(source).read(root);
}

void save_host_overheads(const HostOverheads& overheads, const std::string& path) {
  io::write_file_atomically(path, host_overheads_to_json(overheads));
}

HostOverheads load_host_overheads(const std::string& path) {
  return host_overheads_from_json(io::read_file_decompressed(path), path);
}

}  // namespace perfsim::overheads
