#pragma once
// Communication metadata of a Kineto trace. A collective shows up as a chain
//   c10d::alltoall_base_ / c10d::allreduce_   (cpu_op; Input Dims: output, input, ...)
//     record_param_comms                      (cpu_op; newer profilers add collective args)
//       nccl:all_to_all / nccl:all_reduce     (user_annotation; Input Dims = element count)
//         cudaLaunchKernel -> ncclKernel_...  (GPU)
// Any link may be missing. The CommInfo goes on ONE op per collective: the top-most working
// op of the chain (the engine walks top-level ops and takes the comm of the op or of its
// first descendant with one).
//
// Kineto records no all-to-all split sizes (unless a newer profiler wrote "In split size"):
// an all-to-all whose input and output element counts differ is reported as kAllToAllv with
// empty splits, otherwise kAllToAll. In DLRM the all-to-all runs as grouped NCCL SendRecv
// kernels; the kind still comes from the c10d op / nccl annotation.
#include <cstdint>

#include "perfsim/trace.hpp"

namespace perfsim::trace_io {

struct CollectiveAttribution {
  std::int64_t attached = 0;      // ops given a CommInfo
  std::int64_t unidentified = 0;  // NCCL kernels whose collective could not be named
  std::int64_t dropped = 0;       // collectives no op could hold (no working op around them)
};

// Sets Op::comm on the collectives of `trace` (process group "" = world, group size =
// trace.world_size unless the trace says otherwise).
CollectiveAttribution attach_collectives(Trace& trace);

}  // namespace perfsim::trace_io
