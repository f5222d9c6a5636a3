#pragma once
// Chakra's PyTorch converter stores each argument list of a node as Python's str() of the
// JSON list (IOInfo.values = "[[1, 2, 0, 4, 2, 'cuda:0'], 5, ('0', 'default_pg')]"). This turns
// such a literal into JSON text: quotes, True/False/None and tuples change; JSON text (what
// perfsim writes) passes through unchanged.
#include <optional>
#include <string>
#include <string_view>

namespace perfsim::trace_io {

// JSON text for a Python literal of lists, tuples, numbers, strings, booleans and None;
// nullopt when a string is not closed. The result is not validated: parse it.
std::optional<std::string> python_literal_to_json(std::string_view literal);

}  // namespace perfsim::trace_io
