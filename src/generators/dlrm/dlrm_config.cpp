#include "generators/dlrm/dlrm_config.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "generators/dlrm/dlrm_table_sampler.hpp"
#include "io/input_file.hpp"
#include "io/json_document.hpp"
#include "io/json_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::dlrm {
namespace {

// Counts (rows, batch, ranks, seeds...) and real figures: far beyond any DLRM, small enough
// that products of them stay inside int64 (table bytes are checked in validate()).
constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;
constexpr std::int64_t kMaxWidth = std::int64_t{1} << 24;  // MLP widths and embedding dims
constexpr double kMaxFigure = 1e12;
constexpr std::int64_t kMaxTables = 1'000'000;

using nlohmann::json;

// Field readers: `pointer` is the JSON pointer of the object holding `field`.
class Reader {
 public:
  Reader(const json& object, std::string pointer, const std::string& file)
      : object_(object), pointer_(std::move(pointer)), file_(file) {}

  bool has(const char* field) const { return object_.contains(field); }
  std::string where(const char* field) const { return pointer_ + "/" + field; }

  const json& required(const char* field) const {
    if (!object_.contains(field))
      throw InputError(file_, where(field), "missing required field");
    return object_.at(field);
  }

  std::int64_t positive_int(const char* field) const {
    const json& value = required(field);
    if (!value.is_number_integer() || value.get<std::int64_t>() <= 0)
      throw InputError(file_, where(field), "must be a positive integer, got " + value.dump());
    return io::json_integer(value, 1, kMaxCount, file_, where(field));
  }
  std::int64_t positive_int(const char* field, std::int64_t fallback) const {
    return has(field) ? positive_int(field) : fallback;
  }

  double non_negative_number(const char* field) const {
    const json& value = required(field);
    if (!value.is_number() || value.get<double>() < 0 || !std::isfinite(value.get<double>()))
      throw InputError(file_, where(field), "must be a number >= 0, got " + value.dump());
    return io::json_real(value, 0.0, kMaxFigure, file_, where(field));
  }
  double non_negative_number(const char* field, double fallback) const {
    return has(field) ? non_negative_number(field) : fallback;
  }

  bool boolean(const char* field, bool fallback) const {
    if (!has(field))
      return fallback;
    if (!object_.at(field).is_boolean())
      throw InputError(file_, where(field),
                       "must be true or false, got " + object_.at(field).dump());
    return object_.at(field).get<bool>();
  }

  std::string string(const char* field, const std::string& fallback) const {
    if (!has(field))
      return fallback;
    if (!object_.at(field).is_string())
      throw InputError(file_, where(field), "must be a string, got " + object_.at(field).dump());
    return object_.at(field).get<std::string>();
  }

  std::vector<std::int64_t> widths(const char* field) const {
    const json& value = required(field);
    if (!value.is_array() || value.empty())
      throw InputError(file_, where(field), "must be a non-empty array of layer widths");
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_number_integer() || value[i].get<std::int64_t>() <= 0)
        throw InputError(file_, where(field) + "/" + std::to_string(i),
                         "must be a positive integer, got " + value[i].dump());
      out.push_back(
          io::json_integer(value[i], 1, kMaxWidth, file_, where(field) + "/" + std::to_string(i)));
    }
    return out;
  }

 private:
  const json& object_;
  std::string pointer_;
  const std::string& file_;
};

std::vector<EmbeddingTable> listed_tables(const json& list, std::int64_t default_dim,
                                          const std::string& file) {
  if (!list.is_array() || list.empty())
    throw InputError(file, "/tables", "must be a non-empty array of tables");
  std::vector<EmbeddingTable> tables;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string pointer = "/tables/" + std::to_string(i);
    if (!list[i].is_object())
      throw InputError(file, pointer, "a table is an object {rows, pooling_factor[, dim, name]}");
    const Reader table(list[i], pointer, file);
    EmbeddingTable out;
    out.name = table.string("name", "t" + std::to_string(i));
    out.rows = table.positive_int("rows");
    out.dim = table.positive_int("dim", default_dim);
    out.pooling_factor = table.non_negative_number("pooling_factor");
    tables.push_back(std::move(out));
  }
  return tables;
}

TableSamplerSpec table_generator(const json& spec_json, std::int64_t dim, const std::string& file) {
  if (!spec_json.is_object())
    throw InputError(file, "/table_generator", "must be an object {count, seed, ...}");
  const Reader spec(spec_json, "/table_generator", file);
  TableSamplerSpec sampler;
  // Sampled one by one: a million tables is far beyond the 856 of the largest DLRM published.
  sampler.count = static_cast<int>(
      io::checked_integer(spec.positive_int("count"), 1, kMaxTables, file, spec.where("count")));
  const json& seed = spec.required("seed");
  if (!seed.is_number_integer() || seed.get<std::int64_t>() < 0)
    throw InputError(file, spec.where("seed"), "must be an integer >= 0, got " + seed.dump());
  sampler.seed = seed.get<std::uint64_t>();
  sampler.dim = dim;
  sampler.rows_min = spec.positive_int("rows_min", sampler.rows_min);
  sampler.rows_max = spec.positive_int("rows_max", sampler.rows_max);
  if (sampler.rows_max < sampler.rows_min)
    throw InputError(file, spec.where("rows_max"), "is smaller than rows_min");
  const std::string pooling = spec.string("pooling", "dlrm-2021");
  if (pooling == "dlrm-2021")
    sampler.profile = PoolingProfile::kDlrm2021;
  else if (pooling == "dlrm-2022")
    sampler.profile = PoolingProfile::kDlrm2022;
  else
    throw InputError(file, spec.where("pooling"),
                     "must be \"dlrm-2021\" or \"dlrm-2022\", got \"" + pooling + "\"");
  sampler.heavy_only = spec.boolean("heavy_only", false);
  return sampler;
}

}  // namespace

Bytes table_bytes(const EmbeddingTable& table, DType dtype) {
  return table.rows * table.dim * element_bytes(dtype);
}

std::int64_t table_lookups(const EmbeddingTable& table, std::int64_t batch) {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(batch) * table.pooling_factor));
}

DlrmConfig parse_dlrm_config(std::string_view json_text, const std::string& file) {
  const json doc = io::parse_json_document(json_text, file);
  if (!doc.is_object())
    throw InputError(file, "/", "a DLRM file is a JSON object");
  const Reader root(doc, "", file);
  const std::string schema = root.string("schema", "");
  if (schema != "perfsim-dlrm/1")
    throw InputError(file, "/schema", "expected \"perfsim-dlrm/1\", got \"" + schema + "\"");
  DlrmConfig config;
  config.name = root.string("name", "");
  if (config.name.empty())
    throw InputError(file, "/name", "missing or empty");
  config.source = root.string("source", "");
  config.file = file;
  config.ranks = static_cast<int>(root.positive_int("ranks"));
  config.batch_per_gpu = static_cast<int>(root.positive_int("batch_per_gpu"));
  config.dense_features = static_cast<int>(root.positive_int("dense_features"));
  config.bottom_mlp = root.widths("bottom_mlp");
  config.top_mlp = root.widths("top_mlp");
  const std::string interaction = root.string("interaction", "dot");
  if (interaction != "dot")
    throw InputError(file, "/interaction", "only \"dot\" is modelled, got \"" + interaction + "\"");
  const std::string dtype = root.string("dtype", "fp32");
  const std::optional<DType> parsed = parse_dtype(dtype);
  if (!parsed ||
      (*parsed != DType::kFloat32 && *parsed != DType::kFloat16 && *parsed != DType::kBFloat16))
    throw InputError(file, "/dtype", "must be fp32, fp16 or bf16, got \"" + dtype + "\"");
  config.dtype = *parsed;
  config.bucket_bytes =
      static_cast<Bytes>(std::llround(root.non_negative_number("bucket_mb", 25) * 1024 * 1024));
  if (config.bucket_bytes <= 0)
    throw InputError(file, "/bucket_mb", "must be > 0");
  if (root.has("memory_cap_GB"))
    config.memory_cap_bytes =
        static_cast<Bytes>(std::llround(root.non_negative_number("memory_cap_GB") * 1e9));
  config.distribute_indices = root.boolean("distribute_indices", true);
  if (root.has("seed")) {
    const json& seed = doc.at("seed");
    if (!seed.is_number_integer() || seed.get<std::int64_t>() < 0)
      throw InputError(file, "/seed", "must be an integer >= 0, got " + seed.dump());
    config.seed = seed.get<std::uint64_t>();
  }
  const bool listed = root.has("tables");
  const bool generated = root.has("table_generator");
  if (listed == generated)
    throw InputError(file, "/tables", "give either \"tables\" or \"table_generator\", not both");
  if (listed) {
    config.tables = listed_tables(doc.at("tables"), config.embedding_dim(), file);
  } else {
    config.table_generator =
        table_generator(doc.at("table_generator"), config.embedding_dim(), file);
    config.tables = sample_tables(*config.table_generator);
  }
  validate(config, file);
  return config;
}

DlrmConfig load_dlrm_config(const std::string& path) {
  return parse_dlrm_config(io::read_file_decompressed(path), path);
}

DlrmConfig apply_overrides(DlrmConfig config, const DlrmOverrides& overrides) {
  if (overrides.batch_per_gpu > 0)
    config.batch_per_gpu = overrides.batch_per_gpu;
  if (overrides.ranks > 0)
    config.ranks = overrides.ranks;
  if (overrides.memory_cap_GB)
    config.memory_cap_bytes = static_cast<Bytes>(std::llround(*overrides.memory_cap_GB * 1e9));
  bool resample = false;
  if (overrides.seed) {
    config.seed = *overrides.seed;
    if (config.table_generator) {
      config.table_generator->seed = *overrides.seed;
      resample = true;
    }
  }
  if (overrides.pooling || overrides.heavy_only) {
    if (!config.table_generator)
      throw InputError(config.file, "/tables",
                       "the pooling profile can only be changed for sampled tables "
                       "(\"table_generator\"); this config lists its tables");
    if (overrides.pooling)
      config.table_generator->profile = *overrides.pooling;
    if (overrides.heavy_only)
      config.table_generator->heavy_only = *overrides.heavy_only;
    resample = true;
  }
  if (overrides.tables > 0) {
    if (config.table_generator) {
      config.table_generator->count = overrides.tables;
      resample = true;
    } else {
      const std::vector<EmbeddingTable> listed = config.tables;
      config.tables.clear();
      for (int i = 0; i < overrides.tables; ++i) {
        EmbeddingTable table = listed[static_cast<std::size_t>(i) % listed.size()];
        const int copy = i / static_cast<int>(listed.size());
        if (copy > 0)
          table.name += "~" + std::to_string(copy);
        config.tables.push_back(std::move(table));
      }
    }
  }
  if (resample)
    config.tables = sample_tables(*config.table_generator);
  validate(config, config.file);
  return config;
}

void validate(const DlrmConfig& config, const std::string& file) {
  if (config.ranks <= 0)
    throw InputError(file, "/ranks", "must be positive");
  if (config.batch_per_gpu <= 0)
    throw InputError(file, "/batch_per_gpu", "must be positive");
  if (config.bottom_mlp.empty() || config.top_mlp.empty())
    throw InputError(file, "/bottom_mlp", "bottom and top MLP need at least one layer each");
  if (config.tables.empty())
    throw InputError(file, "/tables", "a DLRM needs at least one embedding table");
  for (std::size_t i = 0; i < config.tables.size(); ++i) {
    const EmbeddingTable& table = config.tables[i];
    // The dot interaction multiplies every pair of features: all must have the same width.
    if (table.dim != config.embedding_dim())
      throw InputError(file, "/tables/" + std::to_string(i) + "/dim",
                       "table '" + table.name + "' has dim " + std::to_string(table.dim) +
                           ", the dot interaction needs every table at the bottom MLP's output "
                           "width " +
                           std::to_string(config.embedding_dim()));
    if (table.rows <= 0 || table.pooling_factor < 0)
      throw InputError(file, "/tables/" + std::to_string(i),
                       "table '" + table.name + "' needs rows > 0 and pooling_factor >= 0");
  }
  if (config.ranks > io::kMaxRanks)
    throw InputError(
        file, "/ranks",
        std::to_string(config.ranks) + " is above the supported " + std::to_string(io::kMaxRanks));
  for (std::size_t i = 0; i < config.tables.size(); ++i) {
    // Rows x dim x 8 bytes (the widest dtype) bounded: table sizes multiply without overflow.
    const std::string where = "/tables/" + std::to_string(i);
    io::checked_bytes(io::checked_product(config.tables[i].rows, config.tables[i].dim,
                                          io::kMaxElements, file, where + "/rows"),
                      8, file, where + "/rows");
  }
  if (config.top_mlp.back() != 1)
    throw InputError(file, "/top_mlp",
                     "the last top MLP layer is the click probability: width 1, got " +
                         std::to_string(config.top_mlp.back()));
}

}  // namespace perfsim::generators::dlrm
