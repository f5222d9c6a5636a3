#pragma once
// What a GPU offers the memory model: its capacity and the context constant, and the verdict
// that compares a footprint with them. Out-of-memory is a verdict with a margin, never an error.
#include <optional>
#include <string>

#include "perfsim/units.hpp"

namespace perfsim::devices {
struct DeviceSpec;
}

namespace perfsim::memory {

// Memory the driver, the CUDA context and the libraries (cuBLAS, cuDNN, NCCL) hold outside the
// framework allocator: seed 003 Sec. 3.3 measures it as a constant per device and library set
// (it explains the gap between max_memory_reserved and nvidia-smi, Fig. 4). Reported sizes:
// 723 MiB for the first CUDA tensor (discuss.pytorch.org/t/73021) and "~700+ MB depending on
// the CUDA version and device" (discuss.pytorch.org/t/81330), both before CUDA's lazy module
// loading (CUDA_MODULE_LOADING=LAZY, PyTorch's default since 2.0) which loads only the kernels
// used. 400 MiB is an estimate for a lazy-loading PyTorch training process, not a measurement:
// measure it per device as seed 003 does (a small matmul and a small convolution, then
// nvidia-smi minus torch.cuda.memory_reserved) and pass it with --context-MiB.
inline constexpr Bytes kDefaultContextBytes = 400LL * 1024 * 1024;

struct DeviceMemory {
  std::string name;                     // for reports only
  std::optional<Bytes> capacity_bytes;  // no verdict without it
  Bytes context_bytes = kDefaultContextBytes;
  // The device file's "architecture" (hopper, ampere, ...): sizes Transformer Engine's cuBLAS
  // workspaces (generators/llm/llm_te_workspace.hpp); empty: unknown, none counted.
  std::string architecture;
};

struct MemoryVerdict {
  bool known = false;  // false when the capacity is unknown
  bool fits = true;
  Bytes margin_bytes = 0;  // capacity - footprint; negative when out of memory
};

// The memory of a device file (hbm_capacity_bytes); capacity_override_GB > 0 (1e9 bytes)
// replaces the file's capacity, e.g. for a partitioned or smaller part.
DeviceMemory device_memory_of(const devices::DeviceSpec& spec, double capacity_override_GB = 0,
                              Bytes context_bytes = kDefaultContextBytes);

MemoryVerdict memory_verdict(Bytes footprint_bytes, const DeviceMemory& device);

// "12.34 GiB" / "512.0 MiB" / "768 B": human-readable, binary units.
std::string format_bytes(Bytes bytes);
// "fits on A100-80GB, 79.22 GiB capacity: 3.2 GiB to spare" / "OUT OF MEMORY on ...: short by
// 1.5 GiB" / "capacity unknown (no verdict)".
std::string format_verdict(const MemoryVerdict& verdict, const DeviceMemory& device);

}  // namespace perfsim::memory
