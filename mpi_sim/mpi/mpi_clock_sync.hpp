#pragma once
// ClockSync across MPI processes. The posts of members that live in this process are first
// combined locally (LocalCollectiveTable); a group whose members span several processes then
// needs one MPI_Iallreduce(MAX) of {max ready time, -min duration} on that group's
// communicator: one collective per simulated collective, with the duration folded in (the
// SST habit of folding flags into the one synchronizing reduction). The reduction is
// non-blocking, so a rank only waits when it needs the collective's end.
//
// Outstanding reductions sit in one compact request array completed with MPI_Testsome (while
// ranks are runnable) and MPI_Waitsome (when none is): the scheduler learns which collectives
// resolved and wakes only the ranks parked on them. The deadlock watch's round shares the array,
// so a process that waits blocks in MPI until a reduction completes or the watch decides.
#include <mpi.h>

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpi_sim/engine/clock_sync.hpp"
#include "mpi_sim/engine/local_collective_table.hpp"
#include "mpi_sim/mpi/deadlock_watch.hpp"
#include "mpi_sim/mpi/stall_alarm.hpp"

namespace perfsim::mpi {

// How a process with nothing runnable waits for MPI.
enum class WaitMode {
  kBlock,     // MPI_Waitsome: the process has a core of its own
  kYieldCore  // MPI_Testsome between growing sleeps: more processes than cores on the node, so
              // a waiting process must give its core to one that simulates
};

// kYieldCore when the launcher started more MPI processes on this node than it has hardware
// threads, kBlock otherwise or when the launcher does not say. Local: processes need not agree
// on how they wait (a node census, MPI_Comm_split_type, took 0.1-0.2 s of a 64-process run
// oversubscribed on 2 cores).
WaitMode wait_mode_of_this_node();

class MpiClockSync final : public engine::ClockSync {
 public:
  // process_of_rank[r] is the MPI rank (in `world`) that simulates rank r. `groups` lists every
  // group (key, members) that a simulated rank of this process takes part in. Creates one
  // communicator per group that spans processes; collective over those processes.
  MpiClockSync(MPI_Comm world, std::vector<int> process_of_rank,
               const std::vector<std::pair<std::string, std::vector<int>>>& groups,
               WaitMode wait_mode, std::chrono::seconds stall_timeout);
  ~MpiClockSync() override;
  MpiClockSync(const MpiClockSync&) = delete;
  MpiClockSync& operator=(const MpiClockSync&) = delete;

  engine::CollectiveHandle post(const engine::CollectivePost& post) override;
  std::optional<engine::CollectiveTiming> poll(engine::CollectiveHandle handle) override;
  bool make_progress() override;
  void test_progress() override;

  // After this process's ranks have finished: waits until every process's have, taking part in
  // the deadlock watch meanwhile. Collective over `world`.
  void wait_for_all_processes();

  std::size_t communicators() const { return communicators_.size(); }
  std::size_t reductions() const { return reductions_; }

 private:
  // One reduction's buffers; slots are reused once their reduction completes.
  struct InFlight {
    double send[2] = {0, 0};
    double receive[2] = {0, 0};
    std::size_t aggregate = 0;
    bool shortest = false;  // the duration was negated for a MIN
  };
  void start_reduction(std::size_t aggregate_id);
  void complete(std::size_t slot);
  // Completes the requests MPI reports done (indices into requests_); returns whether a
  // reduction was among them and whether the watch's round was.
  struct Completed {
    bool reduction = false;
    bool watch_round = false;
  };
  Completed take_completed(int count);
  // One wait for any request, the watch's round included (joined here), under the wait mode;
  // `done`: this process's ranks have finished (no stall timeout then).
  int wait_for_some(bool done);
  [[noreturn]] void fail_deadlock() const;

  MPI_Comm world_;
  WaitMode wait_mode_;
  // Bounds a wait in which nothing completes (a process stopped outside perfsim): a kYieldCore
  // wait checks it between sleeps, a kBlock wait is watched by the alarm's thread.
  std::chrono::seconds stall_timeout_;
  std::optional<StallAlarm> stall_alarm_;
  DeadlockWatch watch_;
  long long completed_ = 0;  // reductions completed here: the watch's measure of progress
  int my_process_ = 0;
  std::vector<int> process_of_rank_;
  engine::LocalCollectiveTable table_;
  std::unordered_map<std::string, MPI_Comm> communicators_;
  std::deque<InFlight> slots_;  // deque: buffers keep their address while MPI uses them
  std::vector<std::size_t> free_slots_;
  // requests_[0] is the watch's round (MPI_REQUEST_NULL while none); requests_[i > 0] are the
  // outstanding reductions, slot_of_request_[i] their slots. Completed ones are swapped out.
  std::vector<MPI_Request> requests_{MPI_REQUEST_NULL};
  std::vector<std::size_t> slot_of_request_{0};
  std::vector<int> indices_;  // MPI_Testsome/MPI_Waitsome output
  std::size_t reductions_ = 0;
};

}  // namespace perfsim::mpi
