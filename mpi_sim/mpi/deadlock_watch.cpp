#include "mpi_sim/mpi/deadlock_watch.hpp"

namespace perfsim::mpi {
namespace {

// One baseline round and this many unchanged rounds after it (and the minimum stall) make a
// deadlock.
constexpr int kRoundsWithoutProgress = 2;

}  // namespace

DeadlockWatch::DeadlockWatch(MPI_Comm world, std::chrono::milliseconds min_stall)
    : min_stall_(min_stall) {
  MPI_Comm_dup(world, &communicator_);
}

DeadlockWatch::~DeadlockWatch() {
  // A round still in flight (an error path) is left to MPI: a nonblocking collective may not be
  // freed, and the others may never join it; freeing the communicator defers to its end.
  if (communicator_ != MPI_COMM_NULL)
    MPI_Comm_free(&communicator_);
}

void DeadlockWatch::join(bool done, long long completed_reductions) {
  if (request_ != MPI_REQUEST_NULL)
    return;
  const bool stalled_long_enough = rounds_without_progress_ > 0 &&
                                   std::chrono::steady_clock::now() - stalled_since_ >= min_stall_;
  send_[0] = completed_reductions;
  send_[1] = done ? 0 : 1;
  send_[2] = stalled_long_enough ? 0 : 1;
  MPI_Iallreduce(send_, receive_, 3, MPI_LONG_LONG, MPI_SUM, communicator_, &request_);
}

DeadlockWatch::Verdict DeadlockWatch::finish_round() {
  request_ = MPI_REQUEST_NULL;
  const bool progressed = receive_[0] != last_round_[0];
  last_round_[0] = receive_[0];
  last_round_[1] = receive_[1];
  if (receive_[1] == 0)
    return Verdict::kAllDone;
  if (progressed) {
    rounds_without_progress_ = 0;
  } else if (++rounds_without_progress_ == 1) {
    stalled_since_ = std::chrono::steady_clock::now();
  }
  const bool everyone_stalled_long_enough = receive_[2] == 0;
  return rounds_without_progress_ >= kRoundsWithoutProgress && everyone_stalled_long_enough
             ? Verdict::kDeadlock
             : Verdict::kProgress;
}

}  // namespace perfsim::mpi
