#include "trace_io/et_arguments.hpp"

#include <algorithm>
#include <array>

#include "io/checked_number.hpp"
#include "perfsim/dtype.hpp"
#include "trace_io/json_integer.hpp"

namespace perfsim::trace_io {
namespace {

namespace dom = simdjson::dom;

// Nested lists deeper than this are not produced by PyTorch; a crafted file is rejected.
constexpr int kMaxListDepth = 16;
constexpr std::size_t kTensorArity = 6;

// "GenericList[Tensor(float),Int]" -> {"Tensor(float)", "Int"}; commas inside parentheses or
// brackets belong to the element.
std::vector<std::string_view> element_types(std::string_view type) {
  std::vector<std::string_view> result;
  std::size_t open = type.find('[');
  if (open == std::string_view::npos || type.back() != ']')
    return result;
  std::string_view inner = type.substr(open + 1, type.size() - open - 2);
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    char c = inner[i];
    if (c == '(' || c == '[')
      ++depth;
    else if (c == ')' || c == ']')
      --depth;
    else if (c == ',' && depth == 0) {
      result.push_back(inner.substr(start, i - start));
      start = i + 1;
    }
  }
  if (!inner.empty())
    result.push_back(inner.substr(start));
  return result;
}

// "inputs[2][0]", built only when an error is reported: most arguments are fine, and
// formatting a name for each of them would cost more than parsing them.
class FieldPath {
 public:
  explicit FieldPath(std::string_view base) : base_(base) {}
  void push(std::size_t index) { indices_[depth_++] = index; }
  void pop() { --depth_; }
  int depth() const { return depth_; }
  std::string str() const {
    std::string text(base_);
    for (int i = 0; i < depth_; ++i) {
      text.push_back('[');
      text.append(std::to_string(indices_[static_cast<std::size_t>(i)]));
      text.push_back(']');
    }
    return text;
  }

 private:
  std::string_view base_;
  std::array<std::size_t, kMaxListDepth + 2> indices_{};
  int depth_ = 0;
};

bool is_tensor_type(std::string_view type) {
  return type.starts_with("Tensor(");
}
bool is_list_type(std::string_view type) {
  return type.starts_with("GenericList[") || type.starts_with("Tuple[") ||
         type.starts_with("List[");
}

class ArgumentReader {
 public:
  explicit ArgumentReader(const NodeLocation& where) : where_(where) {}

  // Appends the tensors found in `value` (of trace type `type`) to `out`.
  void collect(dom::element value, std::string_view type, std::optional<dom::element> shape,
               FieldPath& field, std::vector<TensorRef>& out) const {
    if (field.depth() > kMaxListDepth)
      where_.fail(field.str(),
                  "argument lists nested deeper than " + std::to_string(kMaxListDepth));
    if (is_tensor_type(type)) {
      if (value.is_string()) {
        std::string_view text = value.get_string().value_unsafe();
        if (text.starts_with("<"))  // "<None>": an optional tensor that was not given
          return;
        where_.fail(field.str(), "expected a tensor entry for type " + std::string(type) +
                                     ", got \"" + std::string(text) + "\"");
      }
      out.push_back(read_tensor(value, type, shape, field));
      return;
    }
    if (!is_list_type(type) || !value.is_array())
      return;
    std::vector<std::string_view> types = element_types(type);
    dom::array shapes;
    bool have_shapes = shape && shape->is_array() && !shape->get_array().get(shapes);
    auto shape_it = have_shapes ? shapes.begin() : dom::array::iterator{};
    std::size_t index = 0;
    dom::array elements = value.get_array().value_unsafe();
    for (dom::element element : elements) {
      std::optional<dom::element> element_shape;
      if (have_shapes && shape_it != shapes.end()) {
        element_shape = *shape_it;
        ++shape_it;
      }
      std::string_view element_type = index < types.size() ? types[index] : std::string_view{};
      field.push(index);
      collect(element, element_type, element_shape, field, out);
      field.pop();
      ++index;
    }
  }

 private:
  TensorRef read_tensor(dom::element value, std::string_view type,
                        std::optional<dom::element> shape, const FieldPath& path) const {
    auto field = [&path] { return path.str(); };
    dom::array entry;
    if (value.get_array().get(entry))
      where_.fail(field(),
                  "malformed tensor entry: expected [tensor_id, storage_id, offset, numel, "
                  "element_bytes, device]");
    if (entry.size() != kTensorArity)
      where_.fail(field(), "malformed tensor entry: " + std::to_string(entry.size()) +
                               " elements, expected 6 [tensor_id, storage_id, offset, numel, "
                               "element_bytes, device]");
    std::array<std::int64_t, kTensorArity - 1> numbers{};
    std::size_t slot = 0;
    std::string_view device;
    for (dom::element part : entry) {
      if (slot < numbers.size()) {
        std::optional<std::int64_t> number = integer_of(part);
        if (!number)
          where_.fail(field(), "malformed tensor entry: element " + std::to_string(slot) +
                                   " is not an integer");
        numbers[slot] = *number;
      } else if (part.get_string().get(device)) {
        where_.fail(field(), "malformed tensor entry: element 5 (device) is not a string");
      }
      ++slot;
    }
    TensorRef tensor;
    tensor.tensor_id = numbers[0];
    tensor.storage_id = numbers[1];
    tensor.offset_elements = numbers[2];
    tensor.numel = numbers[3];
    if (tensor.numel < 0)
      where_.fail(field(), "negative numel " + std::to_string(tensor.numel));
    if (numbers[4] < 0 || numbers[4] > 64)
      where_.fail(field(), "element size " + std::to_string(numbers[4]) + " bytes is out of range");
    tensor.element_bytes = static_cast<int>(numbers[4]);
    // Sizes are later multiplied (bytes, message sizes): bound them here, in 128 bits.
    if (static_cast<__int128>(tensor.numel) * tensor.element_bytes > io::kMaxBytes)
      where_.fail(field(), "tensor of " + std::to_string(tensor.numel) + " elements of " +
                               std::to_string(tensor.element_bytes) + " bytes exceeds " +
                               std::to_string(io::kMaxBytes) + " bytes");
    tensor.device = std::string(device);
    tensor.dtype = parse_dtype(type).value_or(DType::kUnknown);
    if (shape) {
      tensor.shape = read_shape(*shape, path);
      __int128 elements = 1;
      for (std::int64_t extent : tensor.shape) {
        if (extent < 0)
          where_.fail(field(), "negative tensor extent " + std::to_string(extent));
        elements = std::min<__int128>(elements * extent, __int128{io::kMaxElements} + 1);
      }
      if (elements > io::kMaxElements)
        where_.fail(field(),
                    "tensor shape of more than " + std::to_string(io::kMaxElements) + " elements");
    }
    return tensor;
  }

  std::vector<std::int64_t> read_shape(dom::element shape, const FieldPath& path) const {
    auto field = [&path] { return path.str(); };
    std::vector<std::int64_t> dims;
    dom::array array;
    if (shape.get_array().get(array))
      where_.fail(field(), "tensor shape is not a list of integers");
    for (dom::element dim : array) {
      std::optional<std::int64_t> size = integer_of(dim);
      if (!size)
        where_.fail(field(), "tensor shape is not a list of integers");
      dims.push_back(*size);
    }
    return dims;
  }

  const NodeLocation& where_;
};

RawArgument raw_argument(dom::element value, std::string_view type) {
  RawArgument raw;
  raw.type = std::string(type);
  if (auto number = integer_of(value)) {
    raw.integer = number;
  } else if (value.is_string()) {
    raw.text = std::string(value.get_string().value_unsafe());
  } else if (value.is_array()) {
    raw.is_list = true;
    dom::array elements = value.get_array().value_unsafe();
    for (dom::element element : elements) {
      if (auto item = integer_of(element))
        raw.integers.push_back(*item);
      else if (element.is_string())
        raw.texts.emplace_back(element.get_string().value_unsafe());
    }
  }
  return raw;
}

}  // namespace

ParsedArguments read_arguments(const ArgumentLists& lists, const ArgumentFieldNames& names,
                               const NodeLocation& where, bool keep_raw) {
  std::size_t count = lists.values.size();
  if (lists.shapes.size() != count)
    where.fail(names.shapes, std::string(names.values) + " has " + std::to_string(count) +
                                 " entries but " + std::string(names.shapes) + " has " +
                                 std::to_string(lists.shapes.size()));
  if (lists.types.size() != count)
    where.fail(names.types, std::string(names.values) + " has " + std::to_string(count) +
                                " entries but " + std::string(names.types) + " has " +
                                std::to_string(lists.types.size()));
  ParsedArguments parsed;
  if (keep_raw)
    parsed.raw.reserve(count);
  ArgumentReader reader(where);
  auto shape_it = lists.shapes.begin();
  auto type_it = lists.types.begin();
  std::size_t index = 0;
  for (dom::element value : lists.values) {
    std::string_view type;
    if ((*type_it).get_string().get(type))
      where.fail(std::string(names.types) + "[" + std::to_string(index) + "]",
                 "type is not a string");
    FieldPath field(names.values);
    field.push(index);
    std::size_t first_tensor = parsed.tensors.size();
    reader.collect(value, type, *shape_it, field, parsed.tensors);
    if (keep_raw) {
      RawArgument raw = raw_argument(value, type);
      raw.tensors.assign(parsed.tensors.begin() + static_cast<std::ptrdiff_t>(first_tensor),
                         parsed.tensors.end());
      parsed.raw.push_back(std::move(raw));
    }
    ++shape_it;
    ++type_it;
    ++index;
  }
  return parsed;
}

}  // namespace perfsim::trace_io
