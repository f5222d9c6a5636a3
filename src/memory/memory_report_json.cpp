#include "memory/memory_report_json.hpp"

#include <sstream>

namespace perfsim::memory {
namespace {

nlohmann::ordered_json device_json(const DeviceMemory& device, const MemoryVerdict& verdict) {
  nlohmann::ordered_json out;
  out["name"] = device.name;
  out["capacity_bytes"] =
      device.capacity_bytes ? nlohmann::ordered_json(*device.capacity_bytes) : nullptr;
  out["context_bytes"] = device.context_bytes;
  // null when the capacity is unknown: no verdict rather than a guessed one.
  out["fits"] = verdict.known ? nlohmann::ordered_json(verdict.fits) : nullptr;
  out["margin_bytes"] = verdict.known ? nlohmann::ordered_json(verdict.margin_bytes) : nullptr;
  return out;
}

}  // namespace

nlohmann::ordered_json llm_memory_json(const generators::llm::TransformerConfig& model,
                                       const generators::llm::ParallelConfig& parallel,
                                       const LlmMemoryEstimate& estimate,
                                       const DeviceMemory& device) {
  nlohmann::ordered_json doc;
  doc["schema"] = kMemoryReportSchema;
  doc["kind"] = "llm_closed_form";
  doc["model"] = model.name;
  doc["layout"] = {{"tp", parallel.tp},
                   {"pp", parallel.pp},
                   {"dp", parallel.dp},
                   {"cp", parallel.cp},
                   {"virtual_stages", parallel.virtual_stages},
                   {"zero_stage", parallel.zero_stage},
                   {"sequence_parallel", parallel.sequence_parallel},
                   {"gradient_dtype", main_gradient_dtype_name(model, parallel)}};
  doc["device"] = device_json(device, estimate.verdict);
  doc["worst_stage"] = estimate.worst_stage;
  doc["activation_bytes_per_layer"] = estimate.activation_bytes_per_layer;
  if (model.is_moe()) {
    // A MoE layer's activations differ from a dense layer's (the text summary prints both):
    // the experts' layout and the MoE layer's figure, per layer and micro-batch.
    doc["layout"]["ep"] = parallel.ep;
    doc["layout"]["etp"] = parallel.expert_tp();
    doc["layout"]["moe_pad_to_capacity"] = parallel.moe_pad_to_capacity;
    doc["layout"]["moe_grouped_gemm"] = parallel.moe_grouped_gemm;
    doc["moe_layers"] = model.moe_layer_count();
    doc["moe_activation_bytes_per_layer"] = estimate.moe_activation_bytes_per_layer;
  }
  doc["stages"] = nlohmann::ordered_json::array();
  for (const StageMemory& stage : estimate.stages)
    doc["stages"].push_back({{"stage", stage.stage},
                             {"layers", stage.layers},
                             {"parameter_count", stage.parameter_count},
                             {"microbatches_in_flight", stage.microbatches_in_flight},
                             {"parameter_bytes", stage.parameter_bytes},
                             {"fp8_weight_bytes", stage.fp8_weight_bytes},
                             {"gradient_bytes", stage.gradient_bytes},
                             {"optimizer_bytes", stage.optimizer_bytes},
                             {"activation_bytes", stage.activation_bytes},
                             {"userbuffer_bytes", stage.userbuffer_bytes},
                             {"workspace_bytes", stage.workspace_bytes},
                             {"context_bytes", stage.context_bytes},
                             {"total_bytes", stage.total_bytes}});
  return doc;
}

std::string llm_memory_csv(const LlmMemoryEstimate& estimate, const DeviceMemory& device) {
  std::ostringstream out;
  out << "stage,layers,parameter_bytes,fp8_weight_bytes,gradient_bytes,optimizer_bytes,"
         "activation_bytes,userbuffer_bytes,workspace_bytes,context_bytes,total_bytes,capacity_"
         "bytes\n";
  for (const StageMemory& stage : estimate.stages)
    out << stage.stage << ',' << stage.layers << ',' << stage.parameter_bytes << ','
        << stage.fp8_weight_bytes << ',' << stage.gradient_bytes << ',' << stage.optimizer_bytes
        << ',' << stage.activation_bytes << ',' << stage.userbuffer_bytes << ','
        << stage.workspace_bytes << ',' << stage.context_bytes << ',' << stage.total_bytes << ','
        << (device.capacity_bytes ? std::to_string(*device.capacity_bytes) : std::string()) << '\n';
  return out.str();
}

nlohmann::ordered_json trace_memory_json(const TraceMemoryReport& report,
                                         const DeviceMemory& device) {
  nlohmann::ordered_json doc;
  doc["schema"] = kMemoryReportSchema;
  doc["kind"] = "trace_replay";
  doc["source"] = report.source;
  doc["gpu_device"] = report.device;
  doc["device"] = device_json(device, report.verdict);
  doc["tensor_count"] = report.tensor_count;
  doc["peak_live_tensor_bytes"] = report.peak_live_tensor_bytes;
  doc["peak_allocated_bytes"] = report.peak_allocated_bytes;
  doc["peak_reserved_bytes"] = report.peak_reserved_bytes;
  doc["peak_device_bytes"] = report.peak_device_bytes;
  doc["peak_op"] = {{"id", report.peak_op_id},
                    {"name", report.peak_op_name},
                    {"top_level", report.peak_top_level_op_name},
                    {"profiler_step", report.peak_profiler_step}};
  return doc;
}

nlohmann::ordered_json kineto_memory_json(const KinetoMemoryReport& report,
                                          const DeviceMemory& device) {
  nlohmann::ordered_json doc;
  doc["schema"] = kMemoryReportSchema;
  doc["kind"] = "kineto_allocator";
  doc["source"] = report.source;
  doc["gpu_device_id"] = report.device_id;
  doc["device"] = device_json(device, report.verdict);
  doc["events"] = report.events;
  doc["allocated_at_start_bytes"] = report.allocated_at_start_bytes;
  doc["allocated_at_end_bytes"] = report.allocated_at_end_bytes;
  doc["peak_allocated_bytes"] = report.peak_allocated_bytes;
  doc["peak_allocated_at_us"] = report.peak_allocated_at_us;
  doc["peak_reserved_bytes"] = report.peak_reserved_bytes;
  doc["peak_device_bytes"] = report.peak_device_bytes;
  doc["inconsistent_events"] = report.inconsistent_events;
  return doc;
}

}  // namespace perfsim::memory
