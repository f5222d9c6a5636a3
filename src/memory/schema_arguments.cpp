#include "memory/schema_arguments.hpp"

namespace perfsim::memory {
namespace {

struct SchemaArgument {
  std::string type;
  std::string name;
};

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  return text;
}

// "Type name=default" pieces between the outer parentheses, split at top-level commas.
std::vector<SchemaArgument> parse_arguments(std::string_view schema) {
  std::vector<SchemaArgument> arguments;
  const std::size_t open = schema.find('(');
  if (open == std::string_view::npos)
    return arguments;
  int depth = 0;
  std::size_t piece_start = open + 1;
  for (std::size_t i = open + 1; i < schema.size(); ++i) {
    const char c = schema[i];
    if (c == '(' || c == '[') {
      ++depth;
      continue;
    }
    const bool closes_list = c == ')' && depth == 0;
    if (c == ')' || c == ']') {
      if (!closes_list) {
        --depth;
        continue;
      }
    }
    if (!(c == ',' && depth == 0) && !closes_list)
      continue;
    std::string_view piece = trim(schema.substr(piece_start, i - piece_start));
    piece_start = i + 1;
    if (const std::size_t equals = piece.find('='); equals != std::string_view::npos)
      piece = trim(piece.substr(0, equals));
    const std::size_t space = piece.rfind(' ');
    if (!piece.empty() && piece != "*" && space != std::string_view::npos)
      arguments.push_back(
          {std::string(trim(piece.substr(0, space))), std::string(trim(piece.substr(space + 1)))});
    if (closes_list)
      break;
  }
  return arguments;
}

bool starts_with_tensor(std::string_view type) {
  return type.starts_with("Tensor");
}
bool is_list(std::string_view type) {
  return type.find('[') != std::string_view::npos;
}
bool is_optional(std::string_view type) {
  return type.find('?') != std::string_view::npos;
}

}  // namespace

std::vector<std::string> tensor_argument_names(std::string_view schema,
                                               std::size_t input_tensor_count) {
  std::vector<SchemaArgument> tensors;
  std::size_t required = 0;
  for (SchemaArgument& argument : parse_arguments(schema)) {
    if (!starts_with_tensor(argument.type))
      continue;
    if (is_list(argument.type))
      return {};
    if (!is_optional(argument.type))
      ++required;
    tensors.push_back(std::move(argument));
  }
  const bool all_present = input_tensor_count == tensors.size();
  const bool optionals_absent = input_tensor_count == required;
  if (!all_present && !optionals_absent)
    return {};
  std::vector<std::string> names;
  for (const SchemaArgument& argument : tensors) {
    if (all_present || !is_optional(argument.type))
      names.push_back(argument.name);
  }
  return names;
}

bool is_optimizer_state_argument(std::string_view argument_name) {
  return argument_name.starts_with("momentum") || argument_name.starts_with("exp_avg") ||
         argument_name.find("optimizer_state") != std::string_view::npos ||
         argument_name.starts_with("max_exp_avg");
}

}  // namespace perfsim::memory
