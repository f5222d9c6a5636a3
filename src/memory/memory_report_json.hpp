#pragma once
// `perfsim memory --format json|csv`: the three memory reports (LLM closed form per pipeline
// stage, trace replay through the allocator emulation, a Kineto trace's recorded allocator) as
// machine-readable documents. Schema "perfsim-memory/1": every size in bytes, every field
// documented in docs/output-formats.md.
#include <nlohmann/json.hpp>
#include <string>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "memory/device_memory.hpp"
#include "memory/kineto_memory.hpp"
#include "memory/llm_memory.hpp"
#include "memory/trace_memory.hpp"

namespace perfsim::memory {

inline constexpr const char* kMemoryReportSchema = "perfsim-memory/1";

nlohmann::ordered_json llm_memory_json(const generators::llm::TransformerConfig& model,
                                       const generators::llm::ParallelConfig& parallel,
                                       const LlmMemoryEstimate& estimate,
                                       const DeviceMemory& device);
// One row per pipeline stage, a header line first.
std::string llm_memory_csv(const LlmMemoryEstimate& estimate, const DeviceMemory& device);

nlohmann::ordered_json trace_memory_json(const TraceMemoryReport& report,
                                         const DeviceMemory& device);
nlohmann::ordered_json kineto_memory_json(const KinetoMemoryReport& report,
                                          const DeviceMemory& device);

}  // namespace perfsim::memory
