#include "microbench/host/memory_op_sweep.hpp"

#include <string>

#include "microbench/host/require_positive.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {
namespace {

constexpr char kMemoryOpSweepSource[] = "<memory-op sweep>";
constexpr Bytes kStatsBytesPerRow = 2 * 4;  // fp32 mean and rstd of layer_norm
constexpr Bytes kMaskBytesPerElement = 1;   // dropout's bool mask

}  // namespace

MemoryOpCase memory_op_case(const std::string& op, DType dtype,
                            const std::array<std::int64_t, 3>& shape) {
  for (std::int64_t dim : shape) {
    if (dim <= 0)
      throw InputError(kMemoryOpSweepSource, op, "dimensions must be positive");
  }
  MemoryOpCase c{op, dtype, shape, 0, 0};
  const Bytes element = element_bytes(dtype);
  const Bytes tensor = shape[0] * shape[1] * shape[2] * element;
  if (op == "add") {
    c.bytes_read = 2 * tensor;
    c.bytes_written = tensor;
  } else if (op == "gelu" || op == "copy" || op == "memcpy_h2d" || op == "memcpy_d2h" ||
             op == "transpose") {
    c.bytes_read = tensor;
    c.bytes_written = tensor;
  } else if (op == "concat") {
    c.bytes_read = 2 * tensor;
    c.bytes_written = 2 * tensor;
  } else if (op == "layer_norm") {
    c.bytes_read = tensor + 2 * shape[1] * element;
    c.bytes_written = tensor + shape[0] * kStatsBytesPerRow;
  } else if (op == "dropout") {
    c.bytes_read = tensor;
    c.bytes_written = tensor + shape[0] * shape[1] * shape[2] * kMaskBytesPerElement;
  } else {
    throw InputError(kMemoryOpSweepSource, op, "unknown memory op");
  }
  return c;
}

std::vector<MemoryOpCase> memory_op_sweep(const MemoryOpSweepOptions& options) {
  if (options.dtypes.empty())
    throw InputError(kMemoryOpSweepSource, "dtypes", "is empty");
  if (options.min_elements < 1)
    throw InputError(kMemoryOpSweepSource, "min_elements", "must be at least 1");
  require_positive(options.concat_cols, kMemoryOpSweepSource, "concat_cols");
  require_positive(options.transpose_batches, kMemoryOpSweepSource, "transpose_batches");
  require_positive(options.transpose_sizes, kMemoryOpSweepSource, "transpose_sizes");
  require_positive(options.layer_norm_hidden, kMemoryOpSweepSource, "layer_norm_hidden");
  std::vector<MemoryOpCase> cases;
  const auto fits = [&](const MemoryOpCase& c) {
    return c.bytes_read + c.bytes_written <= options.memory_cap_bytes;
  };
  const auto add_doubling = [&](const std::string& op, DType dtype, std::int64_t first,
                                std::int64_t second) {
    // Doubles the leading dimension from `first` while the case fits.
    for (std::int64_t lead = first;; lead *= 2) {
      MemoryOpCase c = memory_op_case(op, dtype, {lead, second, 1});
      if (!fits(c))
        break;
      cases.push_back(c);
    }
  };
  for (DType dtype : options.dtypes) {
    for (const char* op : {"add", "gelu", "copy", "dropout", "memcpy_h2d", "memcpy_d2h"})
      add_doubling(op, dtype, options.min_elements, 1);
    for (std::int64_t cols : options.concat_cols)
      add_doubling("concat", dtype, 64, cols);
    for (std::int64_t batch : options.transpose_batches)
      for (std::int64_t rows : options.transpose_sizes)
        for (std::int64_t cols : options.transpose_sizes) {
          MemoryOpCase c = memory_op_case("transpose", dtype, {batch, rows, cols});
          if (fits(c))
            cases.push_back(c);
        }
    for (std::int64_t hidden : options.layer_norm_hidden)
      add_doubling("layer_norm", dtype, 64, hidden);
  }
  return cases;
}

}  // namespace perfsim::microbench
