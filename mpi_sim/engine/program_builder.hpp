#pragma once
// Compiles a trace into a RankProgram as its ops arrive, so that a generator can hand over its
// ops a micro-batch at a time and drop them once compiled: a generated stage of ~50 k ops held
// as a Trace costs ~1.4 kB per op (names, attributes, tensor lists), its compiled program a few
// bytes per op (rank_program.hpp, SimOpList). build_rank_program is this builder given the whole
// trace at once; feeding the same ops in batches builds the same program, since every rule of
// the builder looks only at the op being compiled and at what earlier ops left (the tensor
// labels' rule "the first later op that consumes a collective's buffer waits for it" fills the
// collective's produced list when that later op arrives: tensor_labels.hpp).
#include <cstddef>
#include <memory>

#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::engine {

class ProgramBuilder {
 public:
  // `header` gives the program its source, the process groups its collectives name, the
  // measured step (ProgramOptions::measured_step_only) and the kernels queued before the trace;
  // its ops are not read. It must outlive the builder (until finish()).
  ProgramBuilder(const Trace& header, int sim_rank, int world_size, const ProgramSources& sources,
                 const ProgramOptions& options = {});
  ~ProgramBuilder();
  ProgramBuilder(const ProgramBuilder&) = delete;
  ProgramBuilder& operator=(const ProgramBuilder&) = delete;

  // Compiles the top-level ops of `batch`, the trace's ops from `first_position` on (batch.ops[i]
  // is op first_position + i of the whole trace). A batch holds whole top-level ops with their
  // descendants, in trace order after every earlier batch; its process groups and header fields
  // are not read (the header's are).
  void add(const Trace& batch, std::size_t first_position);
  // The ops compiled so far (program positions; trace_position() says where each came from).
  const SimOpList& ops() const;
  RankProgram finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace perfsim::engine
