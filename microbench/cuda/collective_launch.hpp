#pragma once
// One NCCL collective iteration on every GPU this process drives, and its timing with CUDA
// events. No MPI here: the caller creates the communicators (ncclCommInitAll for one process
// driving all local GPUs, ncclCommInitRank with an id shared through MPI otherwise) and
// combines times across processes.
#include <nccl.h>

#include <string>
#include <vector>

#include "microbench/cuda/cuda_resources.hpp"
#include "microbench/host/all_to_allv_sizes.hpp"
#include "perfsim/comm.hpp"
#include "perfsim/units.hpp"

namespace perfsim::microbench::cuda {

// One GPU's part in the collective: its communicator (owned), stream and buffers.
class Participant {
 public:
  Participant(int device, int rank, ncclComm_t comm, Bytes buffer_bytes);
  Participant(Participant&&) noexcept;
  Participant(const Participant&) = delete;
  Participant& operator=(const Participant&) = delete;
  ~Participant();

  int device() const { return device_; }
  int rank() const { return rank_; }
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_.get(); }
  float* send() const { return send_.as<float>(); }
  float* recv() const { return recv_.as<float>(); }
  Bytes buffer_bytes() const { return static_cast<Bytes>(send_.bytes()); }

 private:
  int device_;
  int rank_;
  ncclComm_t comm_;
  Stream stream_;
  DeviceBuffer send_;
  DeviceBuffer recv_;
};

// The kinds the sweep runs; send/recv is a ring (rank r sends to r + 1, receives from r - 1).
struct CollectiveTest {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  bool random_sizes = false;  // all-to-allv with random per-peer sizes
};
// "all_reduce", "all_to_all", "all_to_allv", "all_gather", "reduce_scatter", "broadcast",
// "sendrecv"; throws InputError("<command line>", "--collectives", ...) for others.
CollectiveTest parse_collective_test(const std::string& name);
std::string collective_test_name(const CollectiveTest& test);

// Enqueues one iteration on every participant inside one NCCL group. message_bytes is in
// nccl-tests' convention; `sizes` gives all-to-allv's per-peer bytes (else equal splits).
void enqueue_collective(std::vector<Participant>& participants, int n_ranks,
                        const CollectiveTest& test, Bytes message_bytes, bool in_place,
                        const AllToAllvSizes* sizes);

// warmup untimed iterations, then `iterations` timed ones; per iteration the slowest local
// participant's time (CUDA events on each stream).
std::vector<double> time_collective(std::vector<Participant>& participants, int n_ranks,
                                    const CollectiveTest& test, Bytes message_bytes, bool in_place,
                                    const AllToAllvSizes* sizes, int warmup, int iterations);

}  // namespace perfsim::microbench::cuda
