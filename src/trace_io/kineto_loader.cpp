#include "trace_io/kineto_loader.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "io/checked_number.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/error.hpp"
#include "trace_io/kineto_comm.hpp"
#include "trace_io/kineto_events.hpp"

namespace perfsim::trace_io {
namespace {

// Execution order of host events: by start; a longer event first (it encloses the shorter
// one); an op before a runtime call (runtime calls are leaves); then file order, since the
// profiler writes a parent before its children when both have the same start and duration.
bool runs_before(const KinetoEvent& a, const KinetoEvent& b) {
  if (a.start_us != b.start_us)
    return a.start_us < b.start_us;
  if (a.duration_us != b.duration_us)
    return a.duration_us > b.duration_us;
  bool a_runtime = a.kind == KinetoEventKind::kRuntimeCall;
  bool b_runtime = b.kind == KinetoEventKind::kRuntimeCall;
  if (a_runtime != b_runtime)
    return !a_runtime;
  return a.index < b.index;
}

std::vector<TensorRef> tensor_inputs(const KinetoEvent& event) {
  std::vector<TensorRef> inputs;
  std::size_t count = std::min(event.input_dims.size(), event.input_types.size());
  for (std::size_t i = 0; i < count; ++i) {
    std::optional<DType> dtype = parse_dtype(event.input_types[i]);
    if (!event.input_dims[i] || !dtype)
      continue;  // a scalar, a tensor list or an unrecorded input
    TensorRef tensor;
    tensor.shape = *event.input_dims[i];
    tensor.numel = std::accumulate(tensor.shape.begin(), tensor.shape.end(), std::int64_t{1},
                                   std::multiplies<>());
    tensor.dtype = *dtype;
    tensor.element_bytes = element_bytes(*dtype);
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

Op make_op(const KinetoEvent& event, std::int64_t id, std::int64_t parent_id) {
  Op op;
  op.id = id;
  op.name = event.name;
  op.parent_id = parent_id;
  op.thread_id = event.thread_id;
  op.is_annotation = event.kind == KinetoEventKind::kAnnotation;
  op.measured_start_us = event.start_us;
  op.measured_duration_us = event.duration_us;
  op.inputs = tensor_inputs(event);
  if (event.external_id)
    op.attributes.push_back({"external_id", *event.external_id});
  if (event.sequence_number)
    op.attributes.push_back({"sequence_number", *event.sequence_number});
  if (!event.input_dims_json.empty())
    op.attributes.push_back({"input_dims", event.input_dims_json});
  if (!event.input_types_json.empty())
    op.attributes.push_back({"input_types", event.input_types_json});
  for (const auto& [key, value] : event.comm_args)
    op.attributes.push_back({key, value});
  return op;
}

Kernel make_kernel(const KinetoEvent& activity, const KinetoEvent* launch) {
  Kernel kernel;
  kernel.name = activity.name;
  kernel.stream = activity.stream;
  // Copies and memsets are memory work whatever their name says.
  kernel.category =
      activity.category == "kernel" ? classify_kernel(activity.name) : KernelCategory::kMemory;
  kernel.correlation_id = activity.correlation_id;
  kernel.measured_start_us = activity.start_us;
  kernel.measured_duration_us = activity.duration_us;
  if (launch != nullptr) {
    kernel.launch_api = launch->name;
    kernel.measured_launch_us = launch->duration_us;
  }
  return kernel;
}

class TreeBuilder {
 public:
  TreeBuilder(const KinetoDocument& document, Trace& trace, KinetoLoadReport& report)
      : document_(document), trace_(trace), report_(report) {
    for (std::size_t i = 0; i < document.events.size(); ++i) {
      const KinetoEvent& event = document.events[i];
      if (event.kind == KinetoEventKind::kGpuActivity)
        activities_by_correlation_[event.correlation_id].push_back(i);
    }
    for (auto& [correlation, positions] : activities_by_correlation_) {
      std::stable_sort(positions.begin(), positions.end(), [&](std::size_t a, std::size_t b) {
        return document.events[a].start_us < document.events[b].start_us;
      });
    }
  }

  void build() {
    std::vector<const KinetoEvent*> host;
    for (const KinetoEvent& event : document_.events) {
      if (event.kind != KinetoEventKind::kGpuActivity)
        host.push_back(&event);
      else
        ++report_.gpu_activities;
    }
    std::sort(host.begin(), host.end(),
              [](const KinetoEvent* a, const KinetoEvent* b) { return runs_before(*a, *b); });
    for (const KinetoEvent* event : host)
      place(*event);
    collect_unattributed();
  }

 private:
  // The innermost open op on the event's thread that contains it.
  std::int64_t enclosing_op(const KinetoEvent& event) {
    std::vector<std::size_t>& stack = open_ops_[event.thread_id];
    while (!stack.empty()) {
      const Op& top = trace_.ops[stack.back()];
      TimestampUs top_end = *top.measured_start_us + *top.measured_duration_us;
      if (event.end_us() <= top_end)
        break;
      if (event.start_us < top_end)
        ++report_.partial_overlaps;
      stack.pop_back();
    }
    return stack.empty() ? kNoParent : static_cast<std::int64_t>(stack.back());
  }

  void place(const KinetoEvent& event) {
    std::int64_t parent = enclosing_op(event);
    if (event.kind == KinetoEventKind::kRuntimeCall) {
      place_runtime_call(event, parent);
      return;
    }
    auto id = static_cast<std::int64_t>(trace_.ops.size());
    trace_.ops.push_back(make_op(event, id, parent));
    if (parent != kNoParent)
      trace_.ops[static_cast<std::size_t>(parent)].child_ids.push_back(id);
    open_ops_[event.thread_id].push_back(static_cast<std::size_t>(id));
    ++(event.kind == KinetoEventKind::kAnnotation ? report_.annotations : report_.cpu_ops);
  }

  void place_runtime_call(const KinetoEvent& event, std::int64_t parent) {
    ++report_.runtime_calls;
    launched_.insert(event.correlation_id);
    std::vector<Kernel> kernels;
    if (auto it = activities_by_correlation_.find(event.correlation_id);
        it != activities_by_correlation_.end()) {
      for (std::size_t position : it->second)
        kernels.push_back(make_kernel(document_.events[position], &event));
    }
    if (parent == kNoParent) {
      ++report_.runtime_calls_outside_ops;
      for (Kernel& kernel : kernels)
        trace_.unattributed_kernels.push_back(std::move(kernel));
      return;
    }
    Op& op = trace_.ops[static_cast<std::size_t>(parent)];
    op.runtime_calls.push_back(
        {event.name, event.start_us, event.duration_us, event.correlation_id});
    for (Kernel& kernel : kernels)
      op.kernels.push_back(std::move(kernel));
  }

  void collect_unattributed() {
    // Correlation ids grow with every launch: a kernel queued before the trace began has an id
    // below the trace's first runtime call. One above it was launched inside the trace by a
    // call the file lacks: a corrupt trace, not a queued kernel.
    std::optional<std::int64_t> first_launch;
    for (const KinetoEvent& event : document_.events) {
      if (event.kind == KinetoEventKind::kRuntimeCall)
        first_launch = std::min(first_launch.value_or(event.correlation_id), event.correlation_id);
    }
    for (const KinetoEvent& event : document_.events) {
      if (event.kind != KinetoEventKind::kGpuActivity || launched_.count(event.correlation_id))
        continue;
      if (first_launch && event.correlation_id > *first_launch) {
        throw InputError(
            document_.source,
            "traceEvents[" + std::to_string(event.index) + "] (\"" + event.name + "\")",
            "field \"args.correlation\" " + std::to_string(event.correlation_id) +
                " matches no runtime call, and it is above the first runtime "
                "call's " +
                std::to_string(*first_launch) +
                ", so the kernel was not queued before the trace began");
      }
      ++report_.unattributed_gpu_activities;
      trace_.unattributed_kernels.push_back(make_kernel(event, nullptr));
    }
    std::stable_sort(trace_.unattributed_kernels.begin(), trace_.unattributed_kernels.end(),
                     [](const Kernel& a, const Kernel& b) {
                       return *a.measured_start_us < *b.measured_start_us;
                     });
  }

  const KinetoDocument& document_;
  Trace& trace_;
  KinetoLoadReport& report_;
  std::unordered_map<std::int64_t, std::vector<std::size_t>> activities_by_correlation_;
  std::unordered_set<std::int64_t> launched_;
  std::unordered_map<std::int64_t, std::vector<std::size_t>> open_ops_;  // by thread
};

void set_measured_step(Trace& trace, KinetoLoadReport& report) {
  for (const Op& op : trace.ops) {
    if (!op.is_annotation || op.name.rfind("ProfilerStep#", 0) != 0)
      continue;
    ++report.profiler_steps;
    if (!trace.measured_step)
      trace.measured_step = MeasuredStep{op.name, *op.measured_start_us, *op.measured_duration_us};
  }
  if (!trace.measured_step)
    return;
  TimestampUs step_end = trace.measured_step->start_us + trace.measured_step->duration_us;
  auto outside = [&](TimestampUs start, DurationUs duration) {
    return start < trace.measured_step->start_us || start + duration > step_end;
  };
  for (const Op& op : trace.ops) {
    report.events_outside_step += outside(*op.measured_start_us, *op.measured_duration_us);
    for (const RuntimeCall& call : op.runtime_calls)
      report.events_outside_step += outside(call.start_us, call.duration_us);
  }
}

// An annotation that launches GPU work while no working op encloses it would hide its
// kernels from the engine (it walks working ops only): it becomes a working op.
void promote_launching_annotations(Trace& trace, KinetoLoadReport& report) {
  // ops are in start order with parents first, so a parent's status is final before its
  // children are visited.
  std::vector<bool> under_working(trace.ops.size(), false);
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    Op& op = trace.ops[i];
    if (op.parent_id != kNoParent) {
      const auto parent = static_cast<std::size_t>(op.parent_id);
      under_working[i] = under_working[parent] || !trace.ops[parent].is_annotation;
    }
    if (op.is_annotation && !op.kernels.empty() && !under_working[i]) {
      op.is_annotation = false;
      ++report.annotations_made_working;
    }
  }
}

// Each timestamp is bounded on its own (kineto_events.cpp); their spread must be too, or one
// event at ts 0 among epoch timestamps makes an 18-digit iteration time.
void check_time_span(const KinetoDocument& document) {
  const KinetoEvent* first = nullptr;
  const KinetoEvent* last = nullptr;
  for (const KinetoEvent& event : document.events) {
    if (first == nullptr || event.start_us < first->start_us)
      first = &event;
    if (last == nullptr || event.end_us() > last->end_us())
      last = &event;
  }
  if (first == nullptr || last->end_us() - first->start_us <= io::kMaxDurationUs)
    return;
  throw InputError(document.source, "traceEvents",
                   "events span " + io::format_number(last->end_us() - first->start_us) +
                       " us (traceEvents[" + std::to_string(first->index) + "] to traceEvents[" +
                       std::to_string(last->index) + "]), above the supported " +
                       io::format_number(io::kMaxDurationUs) + " us");
}

}  // namespace

KinetoLoad load_kineto_trace_with_report(const io::InputBytes& input) {
  KinetoDocument document = parse_kineto_document(input);
  // An empty trace would predict 0 us: a wrong answer, not a fast iteration.
  if (std::none_of(document.events.begin(), document.events.end(), [](const KinetoEvent& event) {
        return event.kind != KinetoEventKind::kGpuActivity;
      }))
    throw InputError(input.source, "traceEvents",
                     "holds no CPU op, annotation or runtime call (" +
                         std::to_string(document.events.size()) +
                         " GPU activities): nothing to simulate");
  check_time_span(document);
  KinetoLoad load;
  Trace& trace = load.trace;
  trace.source = input.source;
  trace.format = "kineto";
  trace.rank = document.rank;
  trace.world_size = document.world_size;
  trace.device_name = document.device_name;
  load.report.ignored_events = document.ignored_events;

  TreeBuilder(document, trace, load.report).build();
  set_measured_step(trace, load.report);
  promote_launching_annotations(trace, load.report);
  CollectiveAttribution collectives = attach_collectives(trace);
  load.report.collectives = collectives.attached;
  load.report.unidentified_collectives = collectives.unidentified;
  load.report.dropped_collectives = collectives.dropped;
  trace.reindex();
  return load;
}

Trace load_kineto_trace(const io::InputBytes& input) {
  return load_kineto_trace_with_report(input).trace;
}

Trace load_kineto_trace_file(const std::string& spec) {
  return load_kineto_trace(io::read_input(spec));
}

std::vector<Trace> load_kineto_archive(const std::string& archive_path) {
  std::vector<Trace> traces;
  for (const io::InputBytes& member : io::read_archive_members(archive_path, ".json"))
    traces.push_back(load_kineto_trace(member));
  if (traces.empty())
    throw InputError(archive_path, "", "holds no .json member");
  std::stable_sort(traces.begin(), traces.end(),
                   [](const Trace& a, const Trace& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < traces.size(); ++i) {
    if (traces[i].rank == traces[i - 1].rank) {
      throw InputError(archive_path, traces[i].source,
                       "distributedInfo.rank " + std::to_string(traces[i].rank) +
                           " is also claimed by " + traces[i - 1].source);
    }
  }
  return traces;
}

}  // namespace perfsim::trace_io
