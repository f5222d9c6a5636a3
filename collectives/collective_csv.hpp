#pragma once
// nccl-tests results converted to CSV, as VIA-Research/vTrain ships them (shared/data/
// collectives/a100-dgx-allreduce): a header line, then rows
//   size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)
// with the out-of-place then the in-place time. The file name says the collective and the GPU
// count ("allreduce-4gpu.csv"); the GPUs are in one node.
#include <string>
#include <string_view>

#include "collectives/collective_sweep.hpp"

namespace perfsim::collectives {

// Throws InputError (file = source, location = "line N" or "file name") for a missing or
// different header, a row with another field count, a non-numeric or non-positive time, sizes
// that do not grow, and a file name without "<collective>-<N>gpu".
CollectiveSweep parse_collective_csv(std::string_view text, const std::string& source);
CollectiveSweep read_collective_csv(const std::string& path);

}  // namespace perfsim::collectives
