#pragma once
// A measured sweep of one collective over message sizes on one group (a nccl-tests run, or a
// microbenchmark table read back from benchmark HDF5).
#include <map>
#include <string>
#include <vector>

#include "perfsim/comm.hpp"
#include "perfsim/units.hpp"

namespace perfsim::collectives {

struct CollectiveSample {
  Bytes bytes = 0;         // nccl-tests "size": the message in nccl-tests' convention
  DurationUs time_us = 0;  // measured (or derived from busbw, see CollectiveSweep)
  BandwidthGBps algbw_GBps = 0;
  BandwidthGBps busbw_GBps = 0;
  bool in_place = false;
};

struct CollectiveSweep {
  std::string name;         // table name: the source file's stem
  std::string source_file;  // path as given
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int n_ranks = 0;
  int n_nodes = 1;
  // True when the source gave bus bandwidth only and time_us = bytes*factor/busbw.
  bool time_derived_from_busbw = false;
  std::vector<CollectiveSample> samples;        // ascending bytes within each placement
  std::map<std::string, std::string> metadata;  // "hardware", "nccl", "interconnect", ...
};

}  // namespace perfsim::collectives
