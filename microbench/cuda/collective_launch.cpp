#include "microbench/cuda/collective_launch.hpp"

#include <algorithm>

#include "perfsim/error.hpp"

namespace perfsim::microbench::cuda {
namespace {

constexpr std::size_t kFloatBytes = sizeof(float);

std::size_t floats(Bytes bytes) {
  return static_cast<std::size_t>(bytes) / kFloatBytes;
}

void enqueue_one(Participant& p, int n, const CollectiveTest& test, Bytes bytes, bool in_place,
                 const AllToAllvSizes* sizes) {
  const int r = p.rank();
  float* send = p.send();
  float* recv = in_place ? p.send() : p.recv();
  const std::size_t count = floats(bytes);
  const std::size_t per_rank = count / static_cast<std::size_t>(n);
  switch (test.kind) {
    case CollectiveKind::kAllReduce:
      check_nccl(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, p.comm(), p.stream()),
                 "ncclAllReduce");
      return;
    case CollectiveKind::kAllGather:
      // In place: this rank's part already sits at its slot of the output.
      check_nccl(ncclAllGather(in_place ? recv + static_cast<std::size_t>(r) * per_rank : send,
                               recv, per_rank, ncclFloat, p.comm(), p.stream()),
                 "ncclAllGather");
      return;
    case CollectiveKind::kReduceScatter:
      check_nccl(ncclReduceScatter(
                     send, in_place ? send + static_cast<std::size_t>(r) * per_rank : p.recv(),
                     per_rank, ncclFloat, ncclSum, p.comm(), p.stream()),
                 "ncclReduceScatter");
      return;
    case CollectiveKind::kBroadcast:
      check_nccl(ncclBroadcast(send, recv, count, ncclFloat, 0, p.comm(), p.stream()),
                 "ncclBroadcast");
      return;
    case CollectiveKind::kSend:
      check_nccl(ncclSend(send, count, ncclFloat, (r + 1) % n, p.comm(), p.stream()), "ncclSend");
      check_nccl(ncclRecv(p.recv(), count, ncclFloat, (r + n - 1) % n, p.comm(), p.stream()),
                 "ncclRecv");
      return;
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllv: {
      // Grouped point-to-point, as PyTorch's all_to_all_single does on NCCL.
      std::size_t sent = 0, received = 0;
      for (int peer = 0; peer < n; ++peer) {
        const std::size_t out = sizes != nullptr ? floats(sizes->bytes_between(r, peer)) : per_rank;
        const std::size_t in = sizes != nullptr ? floats(sizes->bytes_between(peer, r)) : per_rank;
        check_nccl(ncclSend(send + sent, out, ncclFloat, peer, p.comm(), p.stream()), "ncclSend");
        check_nccl(ncclRecv(p.recv() + received, in, ncclFloat, peer, p.comm(), p.stream()),
                   "ncclRecv");
        sent += out;
        received += in;
      }
      return;
    }
    default:
      throw RuntimeFailure("perfsim-bench-collectives: no benchmark for " +
                           std::string(collective_name(test.kind)));
  }
}

}  // namespace

Participant::Participant(int device, int rank, ncclComm_t comm, Bytes buffer_bytes)
    : device_(device),
      rank_(rank),
      comm_(comm),
      stream_((check_cuda(cudaSetDevice(device), "cudaSetDevice"), Stream())),
      send_(static_cast<std::size_t>(buffer_bytes)),
      recv_(static_cast<std::size_t>(buffer_bytes)) {
  check_cuda(cudaMemset(send_.data(), 0, send_.bytes()), "cudaMemset");
  check_cuda(cudaMemset(recv_.data(), 0, recv_.bytes()), "cudaMemset");
}

Participant::Participant(Participant&& other) noexcept
    : device_(other.device_),
      rank_(other.rank_),
      comm_(std::exchange(other.comm_, nullptr)),
      stream_(std::move(other.stream_)),
      send_(std::move(other.send_)),
      recv_(std::move(other.recv_)) {}

Participant::~Participant() {
  if (comm_ != nullptr)
    ncclCommDestroy(comm_);
}

CollectiveTest parse_collective_test(const std::string& name) {
  if (name == "all_reduce")
    return {CollectiveKind::kAllReduce, false};
  if (name == "all_to_all")
    return {CollectiveKind::kAllToAll, false};
  if (name == "all_to_allv")
    return {CollectiveKind::kAllToAllv, true};
  if (name == "all_gather")
    return {CollectiveKind::kAllGather, false};
  if (name == "reduce_scatter")
    return {CollectiveKind::kReduceScatter, false};
  if (name == "broadcast")
    return {CollectiveKind::kBroadcast, false};
  if (name == "sendrecv")
    return {CollectiveKind::kSend, false};
  throw InputError("<command line>", "--collectives",
                   "unknown collective '" + name +
                       "' (all_reduce, all_to_all, all_to_allv, all_gather, reduce_scatter, "
                       "broadcast, sendrecv)");
}

std::string collective_test_name(const CollectiveTest& test) {
  return test.kind == CollectiveKind::kSend ? "sendrecv" : std::string(collective_name(test.kind));
}

void enqueue_collective(std::vector<Participant>& participants, int n_ranks,
                        const CollectiveTest& test, Bytes message_bytes, bool in_place,
                        const AllToAllvSizes* sizes) {
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (Participant& p : participants)
    enqueue_one(p, n_ranks, test, message_bytes, in_place, sizes);
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
}

std::vector<double> time_collective(std::vector<Participant>& participants, int n_ranks,
                                    const CollectiveTest& test, Bytes message_bytes, bool in_place,
                                    const AllToAllvSizes* sizes, int warmup, int iterations) {
  for (int i = 0; i < warmup; ++i)
    enqueue_collective(participants, n_ranks, test, message_bytes, in_place, sizes);
  const std::size_t local = participants.size();
  std::vector<Event> starts, stops;
  for (std::size_t i = 0; i < local * static_cast<std::size_t>(iterations); ++i) {
    check_cuda(cudaSetDevice(participants[i % local].device()), "cudaSetDevice");
    starts.emplace_back();
    stops.emplace_back();
  }
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t p = 0; p < local; ++p)
      starts[static_cast<std::size_t>(it) * local + p].record(participants[p].stream());
    enqueue_collective(participants, n_ranks, test, message_bytes, in_place, sizes);
    for (std::size_t p = 0; p < local; ++p)
      stops[static_cast<std::size_t>(it) * local + p].record(participants[p].stream());
  }
  std::vector<double> times_us(static_cast<std::size_t>(iterations), 0.0);
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t p = 0; p < local; ++p) {
      const std::size_t slot = static_cast<std::size_t>(it) * local + p;
      times_us[static_cast<std::size_t>(it)] =
          std::max(times_us[static_cast<std::size_t>(it)], elapsed_us(starts[slot], stops[slot]));
    }
  }
  return times_us;
}

}  // namespace perfsim::microbench::cuda
