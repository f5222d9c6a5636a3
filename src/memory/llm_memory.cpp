#include "memory/llm_memory.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "perfsim/error.hpp"

namespace perfsim::memory {
namespace {

const char* const kConfigName = "<llm config>";

std::int64_t ffn_of(const LlmMemoryConfig& config) {
  return config.ffn_hidden > 0 ? config.ffn_hidden : 4 * config.hidden;
}

void require_positive(std::int64_t value, const char* field) {
  if (value <= 0)
    throw InputError(kConfigName, field, "must be positive, got " + std::to_string(value));
}

void require_divisible(std::int64_t value, std::int64_t by, const char* field,
                       const std::string& divisor) {
  if (value % by != 0)
    throw InputError(kConfigName, field,
                     std::to_string(value) + " is not divisible by " + divisor + " (" +
                         std::to_string(by) + ")");
}

Bytes to_bytes(double value) {
  return static_cast<Bytes>(std::llround(value));
}

// Bytes per parameter of weights, gradients and Adam state (ZeRO paper Sec. 3.1).
struct StateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
};

StateBytes state_bytes_per_parameter(const LlmMemoryConfig& config) {
  constexpr double kFp32Bytes = 4;
  constexpr double kAdamMomentsBytes = 8;  // fp32 momentum and variance
  StateBytes state;
  state.weights = config.dtype_bytes;
  state.gradients = config.dtype_bytes;
  const double master_copy = config.dtype_bytes < kFp32Bytes ? kFp32Bytes : 0;
  state.optimizer = master_copy + kAdamMomentsBytes;
  const double dp = config.data_parallel;
  if (config.zero_stage >= 1)
    state.optimizer /= dp;
  if (config.zero_stage >= 2)
    state.gradients /= dp;
  if (config.zero_stage >= 3)
    state.weights /= dp;
  return state;
}

}  // namespace

std::string_view recompute_name(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "none";
}

void validate_llm_config(const LlmMemoryConfig& config) {
  require_positive(config.layers, "layers");
  require_positive(config.hidden, "hidden");
  require_positive(config.heads, "heads");
  require_positive(config.seq_len, "seq_len");
  require_positive(config.micro_batch, "micro_batch");
  require_positive(config.vocab, "vocab");
  require_positive(config.dtype_bytes, "dtype_bytes");
  require_positive(config.tensor_parallel, "tensor_parallel");
  require_positive(config.pipeline_parallel, "pipeline_parallel");
  require_positive(config.data_parallel, "data_parallel");
  require_positive(config.virtual_stages, "virtual_stages");
  if (config.ffn_hidden < 0)
    throw InputError(kConfigName, "ffn_hidden", "must not be negative");
  if (config.micro_batches < 0)
    throw InputError(kConfigName, "micro_batches", "must not be negative");
  if (config.zero_stage < 0 || config.zero_stage > 3)
    throw InputError(kConfigName, "zero_stage",
                     "must be 0, 1, 2 or 3, got " + std::to_string(config.zero_stage));
  require_divisible(config.layers, std::int64_t{config.pipeline_parallel} * config.virtual_stages,
                    "layers", "pipeline_parallel x virtual_stages");
  require_divisible(config.heads, config.tensor_parallel, "heads", "tensor_parallel");
  require_divisible(ffn_of(config), config.tensor_parallel, "ffn_hidden", "tensor_parallel");
  if (config.sequence_parallel && config.tensor_parallel == 1)
    throw InputError(kConfigName, "sequence_parallel", "needs tensor_parallel > 1");
  if (config.virtual_stages > 1 && config.pipeline_parallel == 1)
    throw InputError(kConfigName, "virtual_stages", "needs pipeline_parallel > 1");
}

double activation_bytes_per_layer(const LlmMemoryConfig& config) {
  const double s = static_cast<double>(config.seq_len);
  const double b = static_cast<double>(config.micro_batch);
  const double h = static_cast<double>(config.hidden);
  const double a = static_cast<double>(config.heads);
  const double t = config.tensor_parallel;
  const double sbh = s * b * h;
  double bytes = 0;
  switch (config.recompute) {
    case Recompute::kFull:
      bytes = 2 * sbh;
      break;
    case Recompute::kSelective:
      bytes = config.sequence_parallel ? 34 * sbh / t : sbh * (10 + 24 / t);
      break;
    case Recompute::kNone:
      bytes = config.sequence_parallel ? sbh * (34 / t + 5 * a * s / (h * t))
                                       : sbh * (10 + 24 / t + 5 * a * s / (h * t));
      break;
  }
  constexpr double kTableDtypeBytes = 2;
  return bytes * config.dtype_bytes / kTableDtypeBytes;
}

double parameters_per_layer(const LlmMemoryConfig& config) {
  const double h = static_cast<double>(config.hidden);
  const double f = static_cast<double>(ffn_of(config));
  const double t = config.tensor_parallel;
  const double split = 4 * h * h + 2 * h * f + 3 * h + f;  // QKV, projection, two MLP GEMMs
  const double replicated = 6 * h;  // projection and MLP output biases, two layer norms
  return split / t + replicated;
}

LlmMemoryEstimate estimate_llm_memory(const LlmMemoryConfig& config, const DeviceMemory& device) {
  validate_llm_config(config);
  LlmMemoryEstimate estimate;
  estimate.activation_bytes_per_layer = activation_bytes_per_layer(config);

  const int p = config.pipeline_parallel;
  const double t = config.tensor_parallel;
  const double h = static_cast<double>(config.hidden);
  const double sbh = static_cast<double>(config.seq_len) * config.micro_batch * h;
  const double v = static_cast<double>(config.vocab);
  const std::int64_t layers_per_stage = config.layers / p;
  const std::int64_t micro_batches = config.micro_batches > 0 ? config.micro_batches : p;
  const double interleave = config.virtual_stages > 1
                                ? 1.0 + (p - 1.0) / (p * static_cast<double>(config.virtual_stages))
                                : 1.0;
  const StateBytes state = state_bytes_per_parameter(config);
  const double dtype_scale = config.dtype_bytes / 2.0;

  for (int stage = 0; stage < p; ++stage) {
    StageMemory memory;
    memory.stage = stage;
    memory.layers = layers_per_stage;
    const double in_flight = static_cast<double>(std::min<std::int64_t>(p - stage, micro_batches));
    memory.microbatches_in_flight = in_flight * interleave;

    double parameters = layers_per_stage * parameters_per_layer(config);
    double activations =
        layers_per_stage * estimate.activation_bytes_per_layer * memory.microbatches_in_flight;
    if (stage == 0) {
      parameters += v * h / t + static_cast<double>(config.seq_len) * h;
      const double mask_bytes = config.sequence_parallel ? sbh / t : sbh;  // 1-byte mask
      activations += mask_bytes * memory.microbatches_in_flight;
    }
    if (stage == p - 1) {
      parameters += 2 * h;  // final layer norm
      if (p > 1)
        parameters += v * h / t;  // the last stage's copy of the tied word embedding
      activations += 4 * sbh / t * (1 + v / h) * dtype_scale;
    }
    memory.parameter_count = parameters;
    memory.parameter_bytes = to_bytes(parameters * state.weights);
    memory.gradient_bytes = to_bytes(parameters * state.gradients);
    memory.optimizer_bytes = to_bytes(parameters * state.optimizer);
    memory.activation_bytes = to_bytes(activations);
    memory.context_bytes = device.context_bytes;
    memory.total_bytes = memory.parameter_bytes + memory.gradient_bytes + memory.optimizer_bytes +
                         memory.activation_bytes + memory.context_bytes;
    estimate.stages.push_back(memory);
  }
  for (std::size_t i = 1; i < estimate.stages.size(); ++i) {
    if (estimate.stages[i].total_bytes > estimate.stages[estimate.worst_stage].total_bytes)
      estimate.worst_stage = i;
  }
  estimate.verdict = memory_verdict(estimate.stages[estimate.worst_stage].total_bytes, device);
  return estimate;
}

std::string format_llm_memory(const LlmMemoryConfig& config, const LlmMemoryEstimate& estimate,
                              const DeviceMemory& device) {
  std::ostringstream out;
  out << "LLM memory per GPU: L=" << config.layers << " h=" << config.hidden
      << " a=" << config.heads << " s=" << config.seq_len << " b=" << config.micro_batch
      << " v=" << config.vocab << " TP=" << config.tensor_parallel
      << " PP=" << config.pipeline_parallel << " DP=" << config.data_parallel
      << " virtual=" << config.virtual_stages << " ZeRO=" << config.zero_stage
      << " SP=" << (config.sequence_parallel ? "on" : "off")
      << " recompute=" << recompute_name(config.recompute) << "\n";
  out << "  activations per layer per micro-batch: "
      << format_bytes(to_bytes(estimate.activation_bytes_per_layer)) << "\n";
  for (const StageMemory& stage : estimate.stages) {
    const bool shown = estimate.stages.size() <= 4 || stage.stage == 0 ||
                       stage.stage + 1 == static_cast<int>(estimate.stages.size()) ||
                       static_cast<std::size_t>(stage.stage) == estimate.worst_stage;
    if (!shown)
      continue;
    out << "  stage " << stage.stage << ": " << stage.layers << " layers, "
        << stage.microbatches_in_flight << " micro-batches in flight\n";
    out << "    parameters " << format_bytes(stage.parameter_bytes) << " ("
        << stage.parameter_count / 1e9 << "e9 params), gradients "
        << format_bytes(stage.gradient_bytes) << ", optimizer state "
        << format_bytes(stage.optimizer_bytes) << "\n";
    out << "    activations " << format_bytes(stage.activation_bytes) << ", context "
        << format_bytes(stage.context_bytes) << ", total " << format_bytes(stage.total_bytes)
        << "\n";
  }
  out << "  worst stage " << estimate.worst_stage << ": "
      << format_bytes(estimate.stages[estimate.worst_stage].total_bytes) << " -> "
      << format_verdict(estimate.verdict, device) << "\n";
  return out.str();
}

}  // namespace perfsim::memory
