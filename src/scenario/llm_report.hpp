#pragma once
// What `simulate --model` (and the default scenario, and `plan` for its best layout) reports
// beyond the generic figures: the layout line, throughput and MFU, the ideal 1F1B bubble, the
// closed-form memory per stage, and the LLM's detail sections.
#include <span>
#include <string>

#include "memory/device_memory.hpp"
#include "perfsim/duration_source.hpp"
#include "perfsim/rank_result.hpp"
#include "report/run_report.hpp"
#include "scenario/llm_simulation.hpp"

namespace perfsim::scenario {

// "tp/3" -> "tp", "dp/0" -> "dp", "cp/1" -> "cp", "pp/2" -> "pp", "p2p:a->b" -> "p2p" between
// pipeline stages and "cp_ring" between the ranks of one context-parallel ring.
std::string llm_group_kind(const std::string& group,
                           const generators::llm::ParallelConfig& parallel);

// "compute", "tensor-parallel comm", "pipeline send -> next", ...
std::string llm_stream_label(StreamId stream);

struct LlmReportContext {
  LlmScenario scenario;
  double peak_flops_per_s = 0;  // the dense bf16/fp16 GEMM peak MFU divides by
  memory::DeviceMemory device_memory;
  std::string device_name;
};

// Fills the workload line, throughput, ideal bubble and memory of `report`.
void complete_llm_report(const LlmReportContext& context, std::span<const RankResult> results,
                         report::RunReport& report);

// `--detail memory`: every stage's closed-form memory.
std::string llm_memory_detail(const LlmReportContext& context);

// `--detail workload`: precision, overlaps and the compute outside the transformer layers
// (loss, gradient clipping, optimizer) on the first and last pipeline stage, priced by
// `kernels` on freshly generated traces of one rank of each.
std::string llm_workload_detail(const LlmReportContext& context,
                                const KernelDurationSource& kernels);

}  // namespace perfsim::scenario
