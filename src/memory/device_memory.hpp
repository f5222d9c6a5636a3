#pragma once
// What a GPU offers the memory model: its capacity and the context constant, and the verdict
// that compares a footprint with them. Out-of-memory is a verdict with a margin, never an error.
#include <optional>
#include <string>

#include "perfsim/units.hpp"

namespace perfsim::memory {

// Memory the driver, the CUDA context and the libraries (cuBLAS, cuDNN, NCCL) hold outside the
// framework allocator: seed 003 Sec. 3.3 measures it as a constant per device and library set
// (it explains the gap between max_memory_reserved and nvidia-smi, Fig. 4). 400 MiB is an
// estimate in the middle of the 300-500 MiB range commonly seen for a PyTorch process on
// V100/A100 with CUDA 11-12; replace it with a measurement (a small matmul and a small
// convolution, then nvidia-smi minus max_memory_reserved) for a given device.
inline constexpr Bytes kDefaultContextBytes = 400LL * 1024 * 1024;

struct DeviceMemory {
  std::string name;                     // for reports only
  std::optional<Bytes> capacity_bytes;  // no verdict without it
  Bytes context_bytes = kDefaultContextBytes;
};

struct MemoryVerdict {
  bool known = false;  // false when the capacity is unknown
  bool fits = true;
  Bytes margin_bytes = 0;  // capacity - footprint; negative when out of memory
};

MemoryVerdict memory_verdict(Bytes footprint_bytes, const DeviceMemory& device);

// "12.34 GiB" / "512.0 MiB" / "768 B": human-readable, binary units.
std::string format_bytes(Bytes bytes);
// "fits on A100-80GB, 74.51 GiB capacity: 3.2 GiB to spare" / "OUT OF MEMORY on ...: short by
// 1.5 GiB" / "capacity unknown (no verdict)".
std::string format_verdict(const MemoryVerdict& verdict, const DeviceMemory& device);

}  // namespace perfsim::memory
