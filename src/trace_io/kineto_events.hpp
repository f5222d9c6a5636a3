#pragma once
// The first stage of the Kineto loader: parse a Kineto (Chrome trace) JSON document and
// validate the events the loader uses, without building the op tree yet.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/input_file.hpp"
#include "perfsim/units.hpp"

namespace perfsim::trace_io {

enum class KinetoEventKind : std::uint8_t {
  kCpuOp,        // cat "cpu_op" (and "operator" of older profilers)
  kAnnotation,   // cat "user_annotation" / "python_function": ProfilerStep#N, nccl:*, ## .. ##
  kRuntimeCall,  // cat "cuda_runtime" / "cuda_driver"
  kGpuActivity,  // cat "kernel", "gpu_memcpy", "gpu_memset"
};

// An "X" (complete) event the loader uses. Numbers are as recorded (microseconds, epoch).
struct KinetoEvent {
  KinetoEventKind kind = KinetoEventKind::kCpuOp;
  std::size_t index = 0;  // position in traceEvents, for error messages and tie-breaking
  std::string name;
  std::string category;
  std::int64_t thread_id = 0;
  TimestampUs start_us = 0;
  DurationUs duration_us = 0;
  std::int64_t correlation_id = -1;  // runtime calls and GPU activities
  std::int64_t stream = -1;          // GPU activities
  std::optional<std::int64_t> external_id;
  std::optional<std::int64_t> sequence_number;
  // cpu_op / annotation "Input Dims" and "Input type", one entry per input. A dims entry is
  // empty when that input is not a list of integers (scalars, tensor lists).
  std::vector<std::optional<std::vector<std::int64_t>>> input_dims;
  std::vector<std::string> input_types;
  std::string input_dims_json;   // as recorded, for attributes
  std::string input_types_json;  // as recorded, for attributes
  // Communication args newer profilers write on record_param_comms (absent in older traces).
  std::map<std::string, std::string> comm_args;

  TimestampUs end_us() const { return start_us + duration_us; }
};

struct KinetoDocument {
  std::string source;
  int rank = 0;
  int world_size = 1;
  std::string device_name;
  std::vector<KinetoEvent> events;  // in file order
  // Events not used by the loader, by category ("ac2g", "Trace", metadata, instants, ...).
  std::map<std::string, std::int64_t> ignored_events;
};

// Parses and validates. Throws InputError naming the source, the event ("traceEvents[17]")
// and the field for invalid or truncated JSON, a missing traceEvents array, an X event
// without name/ts/dur, a negative duration, a runtime call or GPU activity without a
// correlation id, a GPU activity without a stream, or a correlation id used by two runtime
// calls.
KinetoDocument parse_kineto_document(const io::InputBytes& input);

}  // namespace perfsim::trace_io
