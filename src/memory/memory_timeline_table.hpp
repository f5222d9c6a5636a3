#pragma once
// The memory timeline of a trace replay as an HDF5 column table (src/hdf5/column_table.hpp):
// columns op_id, live_tensor_bytes, allocated_bytes, reserved_bytes, one row per op.
#include "hdf5/column_table.hpp"
#include "memory/trace_memory.hpp"

namespace perfsim::memory {

h5::ColumnTable memory_timeline_table(const TraceMemoryReport& report);

}  // namespace perfsim::memory
