#include "trace_io/et_structure.hpp"

#include <algorithm>

#include "trace_io/et_node_location.hpp"

namespace perfsim::trace_io {
namespace {

// PyTorch's RecordScope::USER_SCOPE: a record_function range opened by user code.
constexpr std::int64_t kUserScope = 7;

std::ptrdiff_t find_position(const std::vector<Op>& ops, std::int64_t id) {
  auto it = std::lower_bound(ops.begin(), ops.end(), id,
                             [](const Op& op, std::int64_t key) { return op.id < key; });
  return it != ops.end() && it->id == id ? it - ops.begin() : -1;
}

}  // namespace

void link_op_tree(std::vector<Op>& ops, const std::string& file, const std::string& parent_field) {
  for (std::size_t i = 1; i < ops.size(); ++i) {
    if (ops[i].id == ops[i - 1].id)
      NodeLocation{file, ops[i].id}.fail("id", "duplicate node id");
  }
  std::vector<std::ptrdiff_t> parent_position(ops.size(), -1);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    Op& op = ops[i];
    if (op.parent_id == op.id) {
      op.parent_id = kNoParent;
      continue;
    }
    if (op.parent_id == kNoParent)
      continue;
    std::ptrdiff_t position = find_position(ops, op.parent_id);
    if (position < 0) {
      if (op.parent_id == 0) {
        op.parent_id = kNoParent;
        continue;
      }
      NodeLocation{file, op.id}.fail(
          parent_field, "dangling parent id " + std::to_string(op.parent_id) + " (no such node)");
    }
    parent_position[i] = position;
  }
  // Cycle check: follow parents, colouring nodes on the current path; a path that reaches a
  // node already on it is a cycle. Each node is finished once, so this is linear.
  enum class Mark : std::uint8_t { kNew, kOnPath, kDone };
  std::vector<Mark> marks(ops.size(), Mark::kNew);
  std::vector<std::size_t> path;
  for (std::size_t start = 0; start < ops.size(); ++start) {
    path.clear();
    std::ptrdiff_t current = static_cast<std::ptrdiff_t>(start);
    while (current >= 0 && marks[static_cast<std::size_t>(current)] == Mark::kNew) {
      marks[static_cast<std::size_t>(current)] = Mark::kOnPath;
      path.push_back(static_cast<std::size_t>(current));
      current = parent_position[static_cast<std::size_t>(current)];
    }
    if (current >= 0 && marks[static_cast<std::size_t>(current)] == Mark::kOnPath) {
      auto first = std::find(path.begin(), path.end(), static_cast<std::size_t>(current));
      std::string cycle;
      for (auto it = first; it != path.end(); ++it)
        cycle += std::to_string(ops[*it].id) + " -> ";
      cycle += std::to_string(ops[*first].id);
      NodeLocation{file, ops[*first].id}.fail(parent_field, "parent cycle " + cycle);
    }
    for (std::size_t position : path)
      marks[position] = Mark::kDone;
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (parent_position[i] >= 0)
      ops[static_cast<std::size_t>(parent_position[i])].child_ids.push_back(ops[i].id);
  }
}

bool is_annotation_node(const Op& op) {
  const std::string& name = op.name;
  if (name.starts_with("[pytorch|profiler|") || name.starts_with("ProfilerStep#"))
    return true;
  if (name.size() >= 4 && name.starts_with("##") && name.ends_with("##"))
    return true;
  if (op.parent_id == kNoParent)
    return true;
  const Attribute* scope = op.find_attribute("scope");
  if (scope != nullptr) {
    const auto* value = std::get_if<std::int64_t>(&scope->value);
    if (value != nullptr && *value == kUserScope && !name.starts_with("nccl:"))
      return true;
  }
  return false;
}

}  // namespace perfsim::trace_io
