#pragma once
// One embedding table of a DLRM (seed 001 Sec. IV-C): E rows of D elements, L lookups pooled
// per sample on average.
#include <cstdint>
#include <string>

namespace perfsim::generators::dlrm {

struct EmbeddingTable {
  std::string name;
  std::int64_t rows = 0;      // E
  std::int64_t dim = 0;       // D
  double pooling_factor = 0;  // L: mean lookups per sample
};

}  // namespace perfsim::generators::dlrm
