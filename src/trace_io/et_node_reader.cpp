#include "trace_io/et_node_reader.hpp"

#include <limits>

#include "perfsim/error.hpp"
#include "trace_io/et_node_location.hpp"
#include "trace_io/json_integer.hpp"

namespace perfsim::trace_io {
namespace {

namespace dom = simdjson::dom;

constexpr ArgumentFieldNames kFlatInputs{"inputs", "input_shapes", "input_types"};
constexpr ArgumentFieldNames kFlatOutputs{"outputs", "output_shapes", "output_types"};
constexpr ArgumentFieldNames kChakraInputs{"inputs.values", "inputs.shapes", "inputs.types"};
constexpr ArgumentFieldNames kChakraOutputs{"outputs.values", "outputs.shapes", "outputs.types"};

bool needs_raw_arguments(std::string_view name) {
  return name == "record_param_comms" || name.starts_with("c10d::") ||
         name == "## process_group:init ##";
}

// A scalar JSON value as an attribute value; nullopt for lists and objects.
// perfsim's ET writer records an op's blocking host call as an attribute (kHostSyncAttribute);
// turn it back into the runtime call. Unknown call names are ignored.
void add_host_sync(Op& op, dom::element value) {
  std::string_view call;
  if (!value.get_string().get(call) && is_blocking_runtime_call(call))
    op.runtime_calls.push_back({std::string(call), 0.0, 0.0, -1});
}

std::optional<Attribute> scalar_attribute(std::string_view name, dom::element value) {
  Attribute attribute{std::string(name), std::int64_t{0}};
  switch (value.type()) {
    case dom::element_type::INT64:
      attribute.value = value.get_int64().value_unsafe();
      return attribute;
    case dom::element_type::UINT64: {
      std::uint64_t number = value.get_uint64().value_unsafe();
      if (number <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        attribute.value = static_cast<std::int64_t>(number);
      else
        attribute.value = static_cast<double>(number);
      return attribute;
    }
    case dom::element_type::DOUBLE:
      attribute.value = value.get_double().value_unsafe();
      return attribute;
    case dom::element_type::STRING:
      attribute.value = std::string(value.get_string().value_unsafe());
      return attribute;
    case dom::element_type::BOOL:
      attribute.value = std::int64_t{value.get_bool().value_unsafe() ? 1 : 0};
      return attribute;
    default:
      return std::nullopt;
  }
}

dom::array require_array(std::optional<dom::element> element, const NodeLocation& where,
                         std::string_view field) {
  if (!element)
    where.fail(field, "missing field");
  dom::array array;
  if (element->get_array().get(array))
    where.fail(field, "expected a list");
  return array;
}

void read_argument_lists(EtNode& record, const ArgumentLists& inputs, const ArgumentLists& outputs,
                         const ArgumentFieldNames& input_names,
                         const ArgumentFieldNames& output_names, const NodeLocation& where) {
  bool keep_raw = needs_raw_arguments(record.op.name);
  trace_io::ParsedArguments in = trace_io::read_arguments(inputs, input_names, where, keep_raw);
  record.op.inputs = std::move(in.tensors);
  record.raw_inputs = std::move(in.raw);
  record.op.outputs = trace_io::read_arguments(outputs, output_names, where, false).tensors;
}

class NodeReader {
 public:
  NodeReader(const std::string& file, EtLayout layout) : file_(file), layout_(layout) {}

  EtNode read(dom::element element, std::size_t index) const {
    dom::object node;
    if (element.get_object().get(node))
      throw InputError(file_, "nodes[" + std::to_string(index) + "]", "node is not an object");
    return layout_ == EtLayout::kFlat ? read_flat(node, index) : read_chakra(node, index);
  }

 private:
  std::int64_t read_id(dom::object node, std::size_t index) const {
    dom::element id;
    if (node["id"].get(id))
      throw InputError(file_, "nodes[" + std::to_string(index) + "]", "node without field id");
    std::optional<std::int64_t> value = integer_of(id);
    if (!value)
      throw InputError(file_, "nodes[" + std::to_string(index) + "], field id",
                       "id is not an integer");
    return *value;
  }

  static std::string read_name(dom::object node, const NodeLocation& where) {
    dom::element name;
    if (node["name"].get(name))
      where.fail("name", "missing field");
    std::string_view text;
    if (name.get_string().get(text))
      where.fail("name", "name is not a string");
    return std::string(text);
  }

  static std::int64_t read_parent(dom::object node, const NodeLocation& where,
                                  std::string_view field) {
    dom::element parent;
    if (node[field].get(parent))
      where.fail(field, "missing field");
    std::optional<std::int64_t> value = integer_of(parent);
    if (!value)
      where.fail(field, "parent id is not an integer");
    return *value;
  }

  EtNode read_flat(dom::object node, std::size_t index) const {
    EtNode record;
    Op& op = record.op;
    op.id = read_id(node, index);
    NodeLocation where{file_, op.id};
    op.name = read_name(node, where);
    op.parent_id = read_parent(node, where, "parent");
    std::optional<dom::element> inputs, input_shapes, input_types;
    std::optional<dom::element> outputs, output_shapes, output_types;
    for (dom::key_value_pair field : node) {
      std::string_view key = field.key;
      if (key == "inputs")
        inputs = field.value;
      else if (key == "input_shapes")
        input_shapes = field.value;
      else if (key == "input_types")
        input_types = field.value;
      else if (key == "outputs")
        outputs = field.value;
      else if (key == "output_shapes")
        output_shapes = field.value;
      else if (key == "output_types")
        output_types = field.value;
      else if (key == "tid")
        op.thread_id = integer_of(field.value).value_or(0);
      else if (key == kHostSyncAttribute)
        add_host_sync(op, field.value);
      else if (key != "id" && key != "name" && key != "parent") {
        if (auto attribute = scalar_attribute(key, field.value))
          op.attributes.push_back(std::move(*attribute));
      }
    }
    ArgumentLists in{require_array(inputs, where, "inputs"),
                     require_array(input_shapes, where, "input_shapes"),
                     require_array(input_types, where, "input_types")};
    ArgumentLists out{require_array(outputs, where, "outputs"),
                      require_array(output_shapes, where, "output_shapes"),
                      require_array(output_types, where, "output_types")};
    read_argument_lists(record, in, out, kFlatInputs, kFlatOutputs, where);
    return record;
  }

  static ArgumentLists chakra_lists(dom::object node, std::string_view field,
                                    const ArgumentFieldNames& names, const NodeLocation& where) {
    dom::object lists;
    dom::element element;
    if (node[field].get(element))
      where.fail(field, "missing field");
    if (element.get_object().get(lists))
      where.fail(field, "expected an object with values, shapes and types");
    auto member = [&](std::string_view key) -> std::optional<dom::element> {
      dom::element value;
      if (lists[key].get(value))
        return std::nullopt;
      return value;
    };
    return ArgumentLists{require_array(member("values"), where, names.values),
                         require_array(member("shapes"), where, names.shapes),
                         require_array(member("types"), where, names.types)};
  }

  EtNode read_chakra(dom::object node, std::size_t index) const {
    EtNode record;
    Op& op = record.op;
    op.id = read_id(node, index);
    NodeLocation where{file_, op.id};
    op.name = read_name(node, where);
    op.parent_id = read_parent(node, where, "ctrl_deps");
    dom::element attrs_element;
    if (node["attrs"].get(attrs_element))
      where.fail("attrs", "missing field");
    dom::array attrs = require_array(attrs_element, where, "attrs");
    std::size_t attr_index = 0;
    for (dom::element attr : attrs) {
      std::string field = "attrs[" + std::to_string(attr_index++) + "]";
      std::string_view name;
      dom::element value;
      if (attr["name"].get_string().get(name) || attr["value"].get(value))
        where.fail(field, "attribute without name or value");
      if (name == "tid") {
        op.thread_id = integer_of(value).value_or(0);
        continue;
      }
      if (name == kHostSyncAttribute) {
        add_host_sync(op, value);
        continue;
      }
      if (auto attribute = scalar_attribute(name, value))
        op.attributes.push_back(std::move(*attribute));
    }
    read_argument_lists(record, chakra_lists(node, "inputs", kChakraInputs, where),
                        chakra_lists(node, "outputs", kChakraOutputs, where), kChakraInputs,
                        kChakraOutputs, where);
    return record;
  }

  const std::string& file_;
  EtLayout layout_;
};

}  // namespace

std::optional<EtLayout> layout_for_schema(std::string_view schema) {
  if (schema.starts_with("1.0."))
    return EtLayout::kFlat;
  if (schema.starts_with("1.1.") && schema.find("-chakra") != std::string_view::npos)
    return EtLayout::kChakra;
  return std::nullopt;
}

EtNode read_et_node(simdjson::dom::element element, std::size_t index, EtLayout layout,
                    const std::string& file) {
  return NodeReader(file, layout).read(element, index);
}

}  // namespace perfsim::trace_io
