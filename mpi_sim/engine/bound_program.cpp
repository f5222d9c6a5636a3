#include "mpi_sim/engine/bound_program.hpp"

#include <unordered_map>

#include "perfsim/error.hpp"

namespace perfsim::engine {

RankProgram bind_collectives(const RankProgram& compiled, int sim_rank, std::string source,
                             std::vector<BoundGroup> roles,
                             std::shared_ptr<const std::vector<std::uint32_t>> role_of,
                             std::shared_ptr<const std::vector<std::uint32_t>> same_indices) {
  if (compiled.binding)
    throw RuntimeFailure("bind_collectives: the compiled program is itself bound");
  if (role_of == nullptr || role_of->size() != compiled.coverage.collectives)
    throw RuntimeFailure("bind_collectives: one role per collective of the program is needed");
  std::vector<std::uint32_t> indices;
  indices.reserve(role_of->size());
  std::unordered_map<std::string_view, std::uint32_t> next_index_in_group;
  for (const std::uint32_t role : *role_of) {
    if (role >= roles.size())
      throw RuntimeFailure("bind_collectives: role " + std::to_string(role) + " of " +
                           std::to_string(roles.size()));
    indices.push_back(next_index_in_group[roles[role].group]++);
  }
  auto binding = std::make_shared<CollectiveBinding>();
  binding->roles = std::move(roles);
  binding->role_of = std::move(role_of);
  binding->index_in_group =
      same_indices != nullptr && *same_indices == indices
          ? std::move(same_indices)
          : std::make_shared<const std::vector<std::uint32_t>>(std::move(indices));
  RankProgram program = compiled;  // shares the ops, the name pool and copies the small rest
  program.sim_rank = sim_rank;
  program.source = std::move(source);
  program.binding = std::move(binding);
  return program;
}

}  // namespace perfsim::engine
