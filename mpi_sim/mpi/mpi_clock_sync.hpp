#pragma once
// ClockSync across MPI processes. The posts of members that live in this process are first
// combined locally (LocalCollectiveTable); a group whose members span several processes then
// needs one MPI_Iallreduce(MAX) of {max ready time, -min duration} on that group's
// communicator: one collective per simulated collective, with the duration folded in (the
// SST habit of folding flags into the one synchronizing reduction). The reduction is
// non-blocking, so a rank only waits when it needs the collective's end.
#include <mpi.h>

#include <chrono>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "mpi_sim/engine/clock_sync.hpp"
#include "mpi_sim/engine/local_collective_table.hpp"
#include "mpi_sim/mpi/deadlock_watch.hpp"

namespace perfsim::mpi {

class MpiClockSync final : public engine::ClockSync {
 public:
  // process_of_rank[r] is the MPI rank (in `world`) that simulates rank r. `groups` lists every
  // group (key, members) that a simulated rank of this process takes part in. Creates one
  // communicator per group that spans processes; collective over those processes.
  MpiClockSync(MPI_Comm world, std::vector<int> process_of_rank,
               const std::vector<std::pair<std::string, std::vector<int>>>& groups,
               std::chrono::seconds stall_timeout);
  ~MpiClockSync() override;
  MpiClockSync(const MpiClockSync&) = delete;
  MpiClockSync& operator=(const MpiClockSync&) = delete;

  engine::CollectiveHandle post(const engine::CollectivePost& post) override;
  std::optional<engine::CollectiveTiming> poll(engine::CollectiveHandle handle) override;
  bool make_progress() override;

  // After this process's ranks have finished: waits until every process's have, taking part in
  // the deadlock watch meanwhile. Collective over `world`.
  void wait_for_all_processes();

  std::size_t communicators() const { return communicators_.size(); }
  std::size_t reductions() const { return reductions_; }

 private:
  struct InFlight {
    MPI_Request request = MPI_REQUEST_NULL;
    double send[2] = {0, 0};
    double receive[2] = {0, 0};
    std::size_t aggregate = 0;
    bool done = false;
    bool shortest = false;  // the duration was negated for a MIN
  };
  void start_reduction(std::size_t aggregate_id);
  void complete(InFlight& in_flight);
  [[noreturn]] void fail_deadlock() const;

  MPI_Comm world_;
  DeadlockWatch watch_;
  long long completed_ = 0;  // reductions completed here: the watch's measure of progress
  int my_process_ = 0;
  std::vector<int> process_of_rank_;
  std::chrono::seconds stall_timeout_;
  engine::LocalCollectiveTable table_;
  std::map<std::string, MPI_Comm> communicators_;
  std::deque<InFlight> in_flight_;  // deque: buffers keep their address while MPI uses them
  std::map<std::size_t, std::size_t> in_flight_of_aggregate_;
  std::vector<std::size_t> pending_;  // indices into in_flight_ not yet completed
  std::size_t reductions_ = 0;
};

}  // namespace perfsim::mpi
