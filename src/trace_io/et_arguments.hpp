#pragma once
// The argument lists of an execution-trace node (inputs or outputs): values, shapes and types
// side by side. Tensors become TensorRefs with shape and dtype; communication nodes also keep
// the raw values (sequence numbers, split sizes, collective names) that CommInfo needs.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "perfsim/tensor.hpp"
#include "trace_io/et_node_location.hpp"

namespace perfsim::trace_io {

// One argument as the trace wrote it.
struct RawArgument {
  std::string type;                     // "Int", "String", "GenericList[Int,Int]", ...
  std::optional<std::int64_t> integer;  // an Int
  std::optional<std::string> text;      // a String
  bool is_list = false;
  std::vector<std::int64_t> integers;  // the Int elements of a list
  std::vector<std::string> texts;      // the String elements of a list or tuple
  std::vector<TensorRef> tensors;      // a Tensor, or the tensors of a list
};

// Field names for error messages: "inputs", "input_shapes", "input_types" in schema 1.0.x,
// "inputs.values", "inputs.shapes", "inputs.types" in 1.1.x-chakra.
struct ArgumentFieldNames {
  std::string_view values;
  std::string_view shapes;
  std::string_view types;
};

struct ArgumentLists {
  simdjson::dom::array values;
  simdjson::dom::array shapes;
  simdjson::dom::array types;
};

struct ParsedArguments {
  std::vector<TensorRef> tensors;  // every tensor, nested lists flattened, in argument order
  std::vector<RawArgument> raw;    // one per argument, only when asked for
};

// Throws InputError naming the node and field for mismatched list lengths, a malformed tensor
// entry ([tensor_id, storage_id, offset, numel, element_bytes, device]), a negative numel or
// element size, or a tensor shape that is not a list of integers.
ParsedArguments read_arguments(const ArgumentLists& lists, const ArgumentFieldNames& names,
                               const NodeLocation& where, bool keep_raw);

}  // namespace perfsim::trace_io
