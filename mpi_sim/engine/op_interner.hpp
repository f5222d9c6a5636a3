#pragma once
// Stores each distinct op of a program being built once (SimOpList): a generated stage
// repeats its layers' ops for every layer and micro-batch, identical down to the last bit of
// their kernels' durations. Ops are equal when the traversal cannot tell them apart: every
// field but the trace position, doubles compared bit for bit. An op with a collective or a
// recorded host timing is never shared (each has its own). Equality and hash both come from
// one list of SimOp's and SimKernel's members (op_interner.cpp, fields_of), which a structured
// binding forces to name every member: a member added later cannot be left out.
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::engine {

class OpInterner {
 public:
  // Appends `op` to `ops`, sharing the body of an equal op appended before through this
  // interner; `op` is copied only when it is new, so a builder can fill one scratch op (see
  // clear_keeping_capacity) instead of allocating the kernels of every op it appends.
  void append(SimOpList& ops, const SimOp& op, std::size_t trace_position);

 private:
  std::unordered_map<std::size_t, std::vector<std::uint32_t>> bodies_by_hash_;
};

// `op` as a default SimOp, its vectors emptied but not freed.
void clear_keeping_capacity(SimOp& op);

}  // namespace perfsim::engine
