#pragma once
// What the gradient-clipping tests read from a generated rank: its grad-clip all-reduces and the
// members of one of its process groups.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "support/op_phase.hpp"

namespace perfsim::test_support {

// (group, group size, bytes) of a collective.
using Reduction = std::tuple<std::string, int, Bytes>;

// Every collective of phase grad-clip of `rank`, in trace order; each must be an all-reduce with
// as many bytes out as in.
inline std::vector<Reduction> clip_all_reduces(const generators::llm::TransformerConfig& model,
                                               const generators::llm::ParallelConfig& parallel,
                                               int rank) {
  std::vector<Reduction> reductions;
  for (const Op& op : generators::llm::generate_llm_rank(model, parallel, rank).ops) {
    if (!op.comm || op_phase(op) != "grad-clip")
      continue;
    EXPECT_EQ(op.comm->kind, CollectiveKind::kAllReduce);
    EXPECT_EQ(op.comm->bytes_out, op.comm->bytes_in);
    reductions.emplace_back(op.comm->process_group, op.comm->group_size, op.comm->bytes_in);
  }
  return reductions;
}

// The members of `rank`'s process group `name`; empty when it has none of that name.
inline std::vector<int> group_members(const generators::llm::ParallelConfig& parallel, int rank,
                                      const std::string& name) {
  for (const ProcessGroup& group : generators::llm::process_groups_of(parallel, rank)) {
    if (group.name == name)
      return group.ranks;
  }
  return {};
}

}  // namespace perfsim::test_support
