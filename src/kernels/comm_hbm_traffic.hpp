#pragma once
// How many bytes of its own GPU's HBM a communication kernel reads and writes per bus byte
// (the bytes nccl-tests counts as bus traffic: what crosses one rank's link). A collective
// running at bus bandwidth W therefore takes hbm_bytes_per_bus_byte x W of the device's HBM
// bandwidth away from the kernels beside it (NCCL's maintainers give the same rule of thumb:
// "at least 2x [the link bandwidth] ... if you add reading from or writing to user data, it
// can be 3x", NVIDIA/nccl#1428).
//
// NCCL between processes (one GPU per process, as Megatron runs) stages every transfer: the
// sender's CTA writes over NVLink into a FIFO in the receiver's HBM, and the receiver's CTA
// reads it back out. Per chunk c of a ring step, on one GPU (Simple protocol):
//   reduce-scatter step: c written into my FIFO by the peer, c read from the FIFO, c of my
//     own input read to add to it; the sum goes to the next peer's FIFO (its HBM, not mine)
//     = 3c; the last step writes the reduced chunk to my output instead (+c once per
//     n - 1 steps, left out);
//   all-gather step: c written into my FIFO, c read from it, c written to my output (the
//     same read forwards it) = 3c;
//   all-reduce: a reduce-scatter then an all-gather over the same bus bytes = 3 per bus byte;
//   send + receive (a ring exchange, all-to-all): c of my input read and sent, c written into
//     my FIFO, read back and written to my output = 4c per c sent.
// LL and LL128 put flags beside the data in the FIFO: LL 8 bytes for 4 of data (the FIFO
// write and read double), LL128 128 for 120. Peer-direct transfers (Transformer Engine's
// userbuffers: registered buffers written or read by the peer, copy engine or SM, no FIFO):
// a reduce-scatter reads my share of each peer's buffer remotely while the peers read theirs
// of mine = 1 per bus byte; an all-gather or p2p push reads my chunk once and has the peer's
// written into my buffer = 2.
// The first send of a ring (no receive yet) and the output write of a reduce-scatter's last
// step add at most 1 / (n - 1) per bus byte and are left out.
#include "perfsim/comm.hpp"

namespace perfsim::kernels {

enum class CommDataPath {
  kNcclStaged,  // NCCL between processes: through the receiver's FIFO
  kPeerDirect,  // registered buffers the peer reads or writes (userbuffers, copy engine p2p)
};

enum class NcclProtocol { kSimple, kLl128, kLl };

// HBM bytes per bus byte on each GPU of the collective. 0 for a barrier.
double hbm_bytes_per_bus_byte(CollectiveKind kind, CommDataPath path,
                              NcclProtocol protocol = NcclProtocol::kSimple);

}  // namespace perfsim::kernels
