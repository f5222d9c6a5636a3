#include "kernels/comm_hbm_traffic.hpp"

namespace perfsim::kernels {
namespace {

// FIFO bytes per data byte: the protocol's flags travel with the data.
double fifo_expansion(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kSimple:
      return 1.0;
    case NcclProtocol::kLl128:
      return 128.0 / 120.0;
    case NcclProtocol::kLl:
      return 2.0;
  }
  return 1.0;
}

}  // namespace

double hbm_bytes_per_bus_byte(CollectiveKind kind, CommDataPath path, NcclProtocol protocol) {
  if (kind == CollectiveKind::kBarrier)
    return 0.0;
  const bool exchange = kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv ||
                        kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kAllToAllv;
  if (path == CommDataPath::kPeerDirect) {
    // No FIFO: the peer reads from or writes into my buffers.
    if (kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kReduce)
      return 1.0;
    return 2.0;
  }
  // Into my FIFO and back out, plus one pass over my own data (input read, or output write).
  const double fifo = 2.0 * fifo_expansion(protocol);
  return exchange ? fifo + 2.0 : fifo + 1.0;
}

}  // namespace perfsim::kernels
