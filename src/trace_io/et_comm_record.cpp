#include "trace_io/et_comm_record.hpp"

#include <charconv>
#include <limits>

#include "io/checked_number.hpp"

namespace perfsim::trace_io {
namespace {

std::optional<std::int64_t> int_attribute(const Op& op, std::string_view name) {
  const Attribute* attribute = op.find_attribute(name);
  if (attribute == nullptr)
    return std::nullopt;
  if (const auto* value = std::get_if<std::int64_t>(&attribute->value))
    return *value;
  return std::nullopt;
}

std::optional<std::string> text_attribute(const Op& op, std::string_view name) {
  const Attribute* attribute = op.find_attribute(name);
  if (attribute == nullptr)
    return std::nullopt;
  if (const auto* value = std::get_if<std::string>(&attribute->value))
    return *value;
  return std::nullopt;
}

// Chakra writes split sizes as a string: "[]" or "[96, 224, 288]".
std::vector<std::int64_t> parse_split_list(std::string_view text, const NodeLocation& where,
                                           std::string_view field) {
  std::vector<std::int64_t> sizes;
  auto fail = [&] { where.fail(field, "malformed split size list \"" + std::string(text) + "\""); };
  if (text.size() < 2 || text.front() != '[' || text.back() != ']')
    fail();
  std::string_view inner = text.substr(1, text.size() - 2);
  while (!inner.empty()) {
    while (!inner.empty() && (inner.front() == ' ' || inner.front() == ','))
      inner.remove_prefix(1);
    if (inner.empty())
      break;
    std::int64_t value = 0;
    auto [end, error] = std::from_chars(inner.data(), inner.data() + inner.size(), value);
    if (error != std::errc{})
      fail();
    sizes.push_back(value);
    inner.remove_prefix(static_cast<std::size_t>(end - inner.data()));
  }
  return sizes;
}

std::int64_t total_numel(const std::vector<TensorRef>& tensors, const NodeLocation& where) {
  __int128 total = 0;
  for (const TensorRef& tensor : tensors) {
    total += tensor.numel;  // each at most 2^50 (et_arguments): no overflow in 128 bits
    if (total > io::kMaxElements)
      where.fail("inputs", "the collective's tensors hold more than " +
                               std::to_string(io::kMaxElements) + " elements");
  }
  return static_cast<std::int64_t>(total);
}

// An integer attribute within [minimum, maximum], or nothing when absent.
std::optional<std::int64_t> bounded_attribute(const Op& op, std::string_view name,
                                              std::int64_t minimum, std::int64_t maximum,
                                              const NodeLocation& where) {
  std::optional<std::int64_t> value = int_attribute(op, name);
  if (!value && op.find_attribute(name) != nullptr)  // a fraction, a number past 2^63, text
    where.fail("attrs." + std::string(name), "is not an integer");
  if (value && (*value < minimum || *value > maximum))
    where.fail("attrs." + std::string(name), std::to_string(*value) + " is outside [" +
                                                 std::to_string(minimum) + ", " +
                                                 std::to_string(maximum) + "]");
  return value;
}

void check_splits(const std::vector<std::int64_t>& splits, const NodeLocation& where,
                  const std::string& field) {
  __int128 total = 0;
  for (std::int64_t split : splits) {
    if (split < 0 || split > io::kMaxElements)
      where.fail(field, "split size " + std::to_string(split) + " is outside [0, " +
                            std::to_string(io::kMaxElements) + "]");
    total += split;
  }
  if (total > io::kMaxElements)
    where.fail(field, "split sizes add up to more than " + std::to_string(io::kMaxElements));
}
}  // namespace

CommRecord read_comm_record(const Op& op, const std::vector<RawArgument>& raw,
                            const NodeLocation& where) {
  CommRecord record;
  std::optional<std::size_t> name_index;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i].type == "String" && raw[i].text) {
      name_index = i;
      break;
    }
  }
  std::vector<TensorRef> input_tensors;
  if (name_index) {
    std::size_t p = *name_index;
    record.collective = *raw[p].text;
    record.collective_field = "inputs[" + std::to_string(p) + "]";
    if (p >= 3)
      record.seq = raw[p - 3].integer;
    if (p >= 2) {
      const RawArgument& group = raw[p - 2];
      if (group.texts.size() == 2) {
        record.group_name = group.texts[0];
        record.group_description = group.texts[1];
      }
      record.group_key = group.integer;
    }
    if (p >= 1)
      record.rank_argument = raw[p - 1].integer;
    if (p + 1 < raw.size())
      record.in_split = raw[p + 1].integers;
    if (p + 2 < raw.size())
      record.out_split = raw[p + 2].integers;
    record.split_field = "inputs[" + std::to_string(p + 1) + "]";
    if (p >= 4)
      input_tensors = raw[p - 4].tensors;
  }
  if (auto name = text_attribute(op, "collective_name")) {
    record.collective = *name;
    record.collective_field = "attrs.collective_name";
  }
  if (record.collective.empty())
    where.fail("inputs", "record_param_comms without a collective name");
  if (auto text = text_attribute(op, "in_split_size")) {
    record.in_split = parse_split_list(*text, where, "attrs.in_split_size");
    record.split_field = "attrs.in_split_size";
  }
  if (auto text = text_attribute(op, "out_split_size"))
    record.out_split = parse_split_list(*text, where, "attrs.out_split_size");
  if (auto name = text_attribute(op, "pg_name"))
    record.group_name = *name;
  if (auto description = text_attribute(op, "pg_desc"))
    record.group_description = *description;
  if (auto size = bounded_attribute(op, "pg_size", 0, io::kMaxRanks, where))
    record.group_size = static_cast<int>(*size);
  record.global_rank_start =
      bounded_attribute(op, "global_rank_start", 0, io::kMaxRanks - 1, where);
  record.global_rank_stride =
      bounded_attribute(op, "global_rank_stride", -io::kMaxRanks, io::kMaxRanks, where);
  check_splits(record.in_split, where, record.split_field);
  check_splits(record.out_split, where, record.split_field);
  if (record.rank_argument && (*record.rank_argument < 0 || *record.rank_argument >= io::kMaxRanks))
    where.fail("inputs", "rank argument " + std::to_string(*record.rank_argument) +
                             " is outside [0, " + std::to_string(io::kMaxRanks - 1) + "]");

  const std::vector<TensorRef>& first_tensors = input_tensors.empty() ? op.inputs : input_tensors;
  if (!first_tensors.empty()) {
    record.dtype = first_tensors.front().dtype;
    record.fallback_element_bytes = first_tensors.front().element_bytes;
  }
  if (auto dtype_name = text_attribute(op, "dtype"))
    record.dtype = parse_dtype(*dtype_name).value_or(record.dtype);
  record.in_elements = bounded_attribute(op, "in_msg_nelems", 0, io::kMaxElements, where)
                           .value_or(total_numel(input_tensors, where));
  record.out_elements = bounded_attribute(op, "out_msg_nelems", 0, io::kMaxElements, where)
                            .value_or(total_numel(op.outputs, where));
  constexpr std::int64_t kMaxMatchTag = std::numeric_limits<std::int32_t>::max();
  record.match_tag = bounded_attribute(op, "p2p_match_tag", 0, kMaxMatchTag, where).value_or(0);
  return record;
}

}  // namespace perfsim::trace_io
