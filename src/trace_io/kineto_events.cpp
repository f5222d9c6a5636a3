#include "trace_io/kineto_events.hpp"

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "io/checked_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::trace_io {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

std::string format_number(double value) {
  std::ostringstream out;
  out.precision(15);
  out << value;
  return out.str();
}

std::optional<KinetoEventKind> kind_of_category(std::string_view category) {
  if (category == "cpu_op" || category == "operator")
    return KinetoEventKind::kCpuOp;
  if (category == "user_annotation" || category == "python_function")
    return KinetoEventKind::kAnnotation;
  if (category == "cuda_runtime" || category == "cuda_driver")
    return KinetoEventKind::kRuntimeCall;
  if (category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset")
    return KinetoEventKind::kGpuActivity;
  return std::nullopt;
}

// Reads the fields of one traceEvents entry, naming it in every error.
class EventReader {
 public:
  EventReader(const std::string& source, std::size_t index, element event)
      : source_(source), index_(index), event_(event) {}

  std::string location() const {
    std::string where = "traceEvents[" + std::to_string(index_) + "]";
    if (!name_.empty())
      where += " (\"" + name_ + "\")";
    return where;
  }
  void set_name(std::string name) { name_ = std::move(name); }

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw InputError(source_, location(), "field \"" + field + "\" " + problem);
  }

  std::optional<element> field(element object, std::string_view key) const {
    element value;
    if (object.at_key(key).get(value) != simdjson::SUCCESS)
      return std::nullopt;
    return value;
  }

  std::string required_string(std::string_view key) const {
    std::optional<element> value = field(event_, key);
    if (!value)
      fail(std::string(key), "is missing");
    std::string_view text;
    if (value->get_string().get(text) != simdjson::SUCCESS)
      fail(std::string(key), "is not a string");
    return std::string(text);
  }

  double required_number(element object, std::string_view key, const std::string& path) const {
    std::optional<element> value = field(object, key);
    if (!value)
      fail(path, "is missing");
    double number = 0;
    if (value->get_double().get(number) != simdjson::SUCCESS)
      fail(path, "is not a number");
    return number;
  }

  std::int64_t required_integer(element object, std::string_view key,
                                const std::string& path) const {
    std::optional<element> value = field(object, key);
    if (!value)
      fail(path, "is missing");
    std::int64_t number = 0;
    if (value->get_int64().get(number) != simdjson::SUCCESS)
      fail(path, "is not an integer");
    return number;
  }

  std::optional<std::int64_t> optional_integer(element object, std::string_view key) const {
    std::optional<element> value = field(object, key);
    std::int64_t number = 0;
    if (!value || value->get_int64().get(number) != simdjson::SUCCESS)
      return std::nullopt;
    return number;
  }

  element event() const { return event_; }
  const std::string& source() const { return source_; }

 private:
  const std::string& source_;
  std::size_t index_;
  element event_;
  std::string name_;
};

std::int64_t thread_id_of(element event) {
  element tid;
  if (event.at_key("tid").get(tid) != simdjson::SUCCESS)
    return 0;
  std::int64_t number = 0;
  if (tid.get_int64().get(number) == simdjson::SUCCESS)
    return number;
  std::string_view text;
  if (tid.get_string().get(text) == simdjson::SUCCESS) {
    // Some profilers write "stream 7" or a numeric string.
    std::size_t digits = text.find_first_of("0123456789");
    if (digits != std::string_view::npos)
      std::from_chars(text.data() + digits, text.data() + text.size(), number);
  }
  return number;
}

void read_input_shapes(const EventReader& reader, element args, KinetoEvent& event) {
  if (std::optional<element> dims = reader.field(args, "Input Dims")) {
    event.input_dims_json = simdjson::minify(*dims);
    simdjson::dom::array list;
    if (dims->get_array().get(list) == simdjson::SUCCESS) {
      for (element entry : list) {
        simdjson::dom::array shape;
        std::optional<std::vector<std::int64_t>> parsed;
        if (entry.get_array().get(shape) == simdjson::SUCCESS) {
          parsed.emplace();
          for (element extent : shape) {
            std::int64_t size = 0;
            if (extent.get_int64().get(size) != simdjson::SUCCESS) {
              parsed.reset();  // a tensor list: a list of lists
              break;
            }
            parsed->push_back(size);
          }
        }
        if (parsed)  // sizes multiply without overflow later
          io::checked_numel(*parsed, reader.source(),
                            reader.location() + " args.Input Dims[" +
                                std::to_string(event.input_dims.size()) + "]");
        event.input_dims.push_back(std::move(parsed));
      }
    }
  }
  if (std::optional<element> types = reader.field(args, "Input type")) {
    event.input_types_json = simdjson::minify(*types);
    simdjson::dom::array list;
    if (types->get_array().get(list) == simdjson::SUCCESS) {
      for (element entry : list) {
        std::string_view text;
        event.input_types.emplace_back(entry.get_string().get(text) == simdjson::SUCCESS ? text
                                                                                         : "");
      }
    }
  }
}

// record_param_comms args of newer profilers (PyTorch >= 2.1).
void read_comm_args(element args, KinetoEvent& event) {
  static constexpr std::string_view kKeys[] = {"Collective name",
                                               "In msg nelems",
                                               "Out msg nelems",
                                               "In split size",
                                               "Out split size",
                                               "Group size",
                                               "Process Group Name",
                                               "dtype",
                                               "Process Group Ranks",
                                               "Process Group Description",
                                               "Global rank start",
                                               "Global rank stride",
                                               "Src Rank",
                                               "Dst Rank",
                                               "Rank"};
  for (std::string_view key : kKeys) {
    element value;
    if (args.at_key(key).get(value) != simdjson::SUCCESS)
      continue;
    std::string_view text;
    if (value.get_string().get(text) == simdjson::SUCCESS)
      event.comm_args.emplace(std::string(key), std::string(text));
    else
      event.comm_args.emplace(std::string(key), simdjson::minify(value));
  }
}

KinetoEvent read_event(const std::string& source, std::size_t index, element json,
                       KinetoEventKind kind, std::string category) {
  EventReader reader(source, index, json);
  KinetoEvent event;
  event.kind = kind;
  event.index = index;
  event.category = std::move(category);
  event.name = reader.required_string("name");
  reader.set_name(event.name);
  event.thread_id = thread_id_of(json);
  event.start_us = reader.required_number(json, "ts", "ts");
  event.duration_us = reader.required_number(json, "dur", "dur");
  if (event.duration_us < 0)
    reader.fail("dur", "is negative (" + format_number(event.duration_us) + ")");
  // A 1e308 us kernel would print a 63-digit iteration time: bound what the engine adds up.
  if (!(event.duration_us <= io::kMaxDurationUs))
    reader.fail("dur", "is " + format_number(event.duration_us) + " us, above the supported " +
                           format_number(io::kMaxDurationUs) + " us");
  if (!(std::abs(event.start_us) <= io::kMaxAbsTimestampUs))
    reader.fail("ts", "is " + format_number(event.start_us) + " us, beyond the supported +-" +
                          format_number(io::kMaxAbsTimestampUs) + " us");

  std::optional<element> args = reader.field(json, "args");
  if (kind == KinetoEventKind::kRuntimeCall || kind == KinetoEventKind::kGpuActivity) {
    if (!args)
      reader.fail("args.correlation", "is missing (no \"args\" object)");
    event.correlation_id = reader.required_integer(*args, "correlation", "args.correlation");
  }
  if (kind == KinetoEventKind::kGpuActivity)
    event.stream = reader.required_integer(*args, "stream", "args.stream");
  if (args && (kind == KinetoEventKind::kCpuOp || kind == KinetoEventKind::kAnnotation)) {
    event.external_id = reader.optional_integer(*args, "External id");
    event.sequence_number = reader.optional_integer(*args, "Sequence number");
    read_input_shapes(reader, *args, event);
    read_comm_args(*args, event);
  }
  return event;
}

void read_header(const std::string& source, element root, KinetoDocument& document) {
  element info;
  if (root.at_key("distributedInfo").get(info) == simdjson::SUCCESS) {
    std::int64_t value = 0;
    if (info.at_key("rank").get_int64().get(value) == simdjson::SUCCESS)
      document.rank = static_cast<int>(
          io::checked_integer(value, 0, io::kMaxRanks - 1, source, "distributedInfo.rank"));
    if (info.at_key("world_size").get_int64().get(value) == simdjson::SUCCESS)
      document.world_size = static_cast<int>(
          io::checked_integer(value, 1, io::kMaxRanks, source, "distributedInfo.world_size"));
    if (document.world_size < 1 || document.rank < 0 || document.rank >= document.world_size) {
      throw InputError(source, "distributedInfo",
                       "rank " + std::to_string(document.rank) + " is not within world_size " +
                           std::to_string(document.world_size));
    }
  }
  simdjson::dom::array devices;
  if (root.at_key("deviceProperties").get_array().get(devices) == simdjson::SUCCESS) {
    for (element device : devices) {
      std::string_view name;
      if (device.at_key("name").get_string().get(name) == simdjson::SUCCESS) {
        document.device_name = std::string(name);
        break;
      }
    }
  }
}

}  // namespace

KinetoDocument parse_kineto_document(const io::InputBytes& input) {
  KinetoDocument document;
  document.source = input.source;
  simdjson::dom::parser parser;
  simdjson::padded_string padded(input.bytes);
  element root;
  if (auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS) {
    throw InputError(
        input.source, "",
        std::string("invalid JSON (truncated or malformed): ") + simdjson::error_message(error));
  }
  simdjson::dom::array events;
  element events_value;
  if (root.at_key("traceEvents").get(events_value) != simdjson::SUCCESS)
    throw InputError(input.source, "traceEvents", "is missing: not a Kineto trace");
  if (events_value.get_array().get(events) != simdjson::SUCCESS)
    throw InputError(input.source, "traceEvents", "is not an array");
  read_header(input.source, root, document);

  std::unordered_map<std::int64_t, std::size_t> runtime_by_correlation;
  std::size_t index = 0;
  for (element json : events) {
    std::string_view phase;
    std::string_view category;
    // Absent or non-string ph/cat leave the views empty: the event is then ignored.
    if (json.at_key("ph").get_string().get(phase) != simdjson::SUCCESS)
      phase = {};
    if (json.at_key("cat").get_string().get(category) != simdjson::SUCCESS)
      category = {};
    std::optional<KinetoEventKind> kind = kind_of_category(category);
    if (phase != "X" || !kind) {
      std::string label = category.empty() ? "ph " + std::string(phase) : std::string(category);
      ++document.ignored_events[label];
      ++index;
      continue;
    }
    KinetoEvent event = read_event(input.source, index, json, *kind, std::string(category));
    if (event.kind == KinetoEventKind::kRuntimeCall) {
      auto [it, inserted] = runtime_by_correlation.emplace(event.correlation_id, index);
      if (!inserted) {
        throw InputError(input.source,
                         "traceEvents[" + std::to_string(index) + "] (\"" + event.name + "\")",
                         "field \"args.correlation\" " + std::to_string(event.correlation_id) +
                             " is already used by the runtime call traceEvents[" +
                             std::to_string(it->second) + "]");
      }
    }
    document.events.push_back(std::move(event));
    ++index;
  }
  return document;
}

}  // namespace perfsim::trace_io
