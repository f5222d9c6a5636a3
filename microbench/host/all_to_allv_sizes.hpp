#pragma once
// Random per-peer sizes of an all-to-allv test (seed 001 Sec. IV-A: test data "with random
// per-device message size for all-to-all"). Every rank sends the same total, cut at uniformly
// random points into one part per peer, so what each rank receives differs; the model's size
// is the maximum over ranks of max(sent, received) (collectives::all_to_allv_message_bytes).
#include <cstdint>
#include <vector>

#include "perfsim/units.hpp"

namespace perfsim::microbench {

struct AllToAllvSizes {
  int n_ranks = 0;
  std::vector<Bytes> bytes;  // row-major [sender * n_ranks + receiver]

  Bytes bytes_between(int sender, int receiver) const;
  Bytes sent_by(int rank) const;
  Bytes received_by(int rank) const;
  std::vector<Bytes> sent_per_rank() const;
  std::vector<Bytes> received_per_rank() const;
  // max over ranks of max(sent, received): the size the collective model uses.
  Bytes model_message_bytes() const;
};

// Each sender's row sums to bytes_per_rank rounded down to whole elements; every entry is a
// whole number of elements. Same seed, same sizes. Throws InputError("<all-to-allv sizes>",
// field, problem) for n_ranks < 1, a negative size or a non-positive element size.
AllToAllvSizes random_all_to_allv_sizes(int n_ranks, Bytes bytes_per_rank, int element_bytes,
                                        std::uint64_t seed);

}  // namespace perfsim::microbench
