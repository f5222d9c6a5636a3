#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::engine {

Bytes signature_bytes(const CommInfo& comm) {
  // All-to-all(v) and point-to-point sizes legitimately differ per member.
  const bool size_must_match =
      comm.kind == CollectiveKind::kAllReduce || comm.kind == CollectiveKind::kBroadcast ||
      comm.kind == CollectiveKind::kReduce || comm.kind == CollectiveKind::kAllGather ||
      comm.kind == CollectiveKind::kReduceScatter;
  return size_must_match ? comm.bytes_in : 0;
}

std::vector<CollectiveSignature> collective_signatures(const RankProgram& program) {
  std::vector<CollectiveSignature> signatures;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const SimOp& op = program.ops[i];
    if (!op.collective)
      continue;
    const RankCollective collective = program.collective_of(op);
    const CommInfo& comm = collective.shared.comm;
    CollectiveSignature signature;
    signature.group = collective.group;
    signature.index_in_group = collective.index_in_group;
    signature.kind = comm.kind;
    signature.bytes = signature_bytes(comm);
    signature.op_position = program.ops.trace_position(i);
    signature.op_name = std::string(op.name);
    signatures.push_back(std::move(signature));
  }
  return signatures;
}

}  // namespace perfsim::engine
