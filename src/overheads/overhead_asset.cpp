#include "overheads/overhead_asset.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include <fstream>
#include <sstream>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/input_file.hpp"
#include "perfsim/error.hpp"

namespace perfsim::overheads {
namespace {

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

OverheadStats from_record(const StatsRecord& record, const std::string& source,
                          const std::string& location) {
  if (record.count < 0 || record.stddev_us < 0) {
    throw InputError(source, location,
                     "count and stddev_us must not be negative (count " +
                         std::to_string(record.count) + ", stddev_us " +
                         std::to_string(record.stddev_us) + ")");
  }
  return {record.mean_us, record.stddev_us, record.count};
}

OpOverheads from_record(const StatsRecord& t1, const StatsRecord& t2, const StatsRecord& t3,
                        const StatsRecord& t5, const std::string& source,
                        const std::string& location) {
  return {from_record(t1, source, location + ".t1"), from_record(t2, source, location + ".t2"),
          from_record(t3, source, location + ".t3"), from_record(t5, source, location + ".t5")};
}

HostOverheads from_record(const AssetRecord& record, const std::string& source) {
  if (record.format != kFormat)
    throw InputError(source, "host_overheads.format",
                     "is \"" + record.format + "\", expected \"" + kFormat + "\"");
  if (record.version != kVersion)
    throw InputError(source, "host_overheads.version",
                     "is " + std::to_string(record.version) + ", this build reads version " +
                         std::to_string(kVersion));
  HostOverheads overheads;
  overheads.source_traces = record.source_traces;
  overheads.launch = {record.launch.kernel_gap_us,
                      record.launch.launch_fraction_of_t4,
                      record.launch.profiler_cpu_overhead_us,
                      record.launch.profiler_gpu_overhead_us,
                      record.launch.remove_iqr_outliers,
                      LaunchParameters{}.launch_queue_depth};  // a device property, not measured
  const PooledRecord& pooled = record.all_ops;
  overheads.all_ops =
      from_record(pooled.t1, pooled.t2, pooled.t3, pooled.t5, source, "host_overheads.all_ops");
  overheads.t4_all = from_record(record.t4_all, source, "host_overheads.t4_all");
  for (std::size_t i = 0; i < record.per_op.size(); ++i) {
    const OpRecord& op = record.per_op[i];
    std::string location = "host_overheads.per_op[" + std::to_string(i) + "] (\"" + op.op + "\")";
    if (!overheads.per_op.emplace(op.op, from_record(op.t1, op.t2, op.t3, op.t5, source, location))
             .second)
      throw InputError(source, location, "op listed twice");
  }
  for (std::size_t i = 0; i < record.t4_per_runtime.size(); ++i) {
    const RuntimeRecord& runtime = record.t4_per_runtime[i];
    std::string location = "host_overheads.t4_per_runtime[" + std::to_string(i) + "] (\"" +
                           runtime.runtime_api + "\")";
    if (!overheads.t4_per_runtime
             .emplace(runtime.runtime_api, from_record(runtime.t4, source, location + ".t4"))
             .second)
      throw InputError(source, location, "runtime API listed twice");
  }
  return overheads;
}

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

HostOverheads host_overheads_from_json(const std::string& json, const std::string& source) {
  // cereal reports a syntax error as a failed internal assertion; rapidjson itself says where.
  rapidjson::Document syntax;
  syntax.Parse(json.c_str(), json.size());
  if (syntax.HasParseError()) {
    throw InputError(
        source, "byte " + std::to_string(syntax.GetErrorOffset()),
        std::string("invalid JSON: ") + rapidjson::GetParseError_En(syntax.GetParseError()));
  }
  if (!syntax.IsObject())
    throw InputError(source, "", "a host-overhead asset is a JSON object");
  AssetRecord record;
  try {
    std::istringstream in(json);
    cereal::JSONInputArchive archive(in);
    archive(cereal::make_nvp("host_overheads", record));
  } catch (const cereal::Exception& error) {
    throw InputError(source, "host_overheads",
                     std::string("not a host-overhead asset: ") + error.what());
  }
  return from_record(record, source);
}

void save_host_overheads(const HostOverheads& overheads, const std::string& path) {
  io::write_file_atomically(path, host_overheads_to_json(overheads));
}

HostOverheads load_host_overheads(const std::string& path) {
  return host_overheads_from_json(io::read_file_decompressed(path), path);
}

}  // namespace perfsim::overheads
