#include "mpi_sim/mpi/mpi_clock_sync.hpp"

#include <algorithm>
#include <set>
#include <thread>

#include "mpi_sim/mpi/distributed_run.hpp"
#include "perfsim/error.hpp"

namespace perfsim::mpi {

MpiClockSync::MpiClockSync(MPI_Comm world, std::vector<int> process_of_rank,
                           const std::vector<std::pair<std::string, std::vector<int>>>& groups,
                           std::chrono::seconds stall_timeout)
    : world_(world),
      watch_(world),
      process_of_rank_(std::move(process_of_rank)),
      stall_timeout_(stall_timeout),
      table_([this](int rank) { return process_of_rank_.at(rank) == my_process_; }) {
  MPI_Comm_rank(world_, &my_process_);
  // Creation is blocking and collective over each group's processes: every process walks the
  // groups in the same (sorted) order, so overlapping creations cannot wait on each other.
  std::map<std::string, std::vector<int>> sorted(groups.begin(), groups.end());
  MPI_Group world_group;
  MPI_Comm_group(world_, &world_group);
  for (const auto& [key, members] : sorted) {
    std::set<int> processes;
    for (int member : members)
      processes.insert(process_of_rank_.at(member));
    if (processes.size() < 2)
      continue;  // resolved in this process
    std::vector<int> process_list(processes.begin(), processes.end());
    MPI_Group group;
    MPI_Group_incl(world_group, static_cast<int>(process_list.size()), process_list.data(), &group);
    MPI_Comm communicator = MPI_COMM_NULL;
    MPI_Comm_create_group(world_, group, 0, &communicator);
    MPI_Group_free(&group);
    communicators_.emplace(key, communicator);
  }
  MPI_Group_free(&world_group);
}

MpiClockSync::~MpiClockSync() {
  for (auto& [key, communicator] : communicators_) {
    if (communicator != MPI_COMM_NULL)
      MPI_Comm_free(&communicator);
  }
}

engine::CollectiveHandle MpiClockSync::post(const engine::CollectivePost& post) {
  auto [handle, complete_locally] = table_.add(post);
  if (complete_locally) {
    auto& aggregate = table_.at(handle);
    if (aggregate.all_members_local()) {
      aggregate.timing = engine::CollectiveTiming{aggregate.max_ready_us,
                                                  aggregate.max_ready_us + aggregate.duration_us};
    } else {
      start_reduction(handle.id);
    }
  }
  return handle;
}

void MpiClockSync::start_reduction(std::size_t aggregate_id) {
  const auto& aggregate = table_.at(engine::CollectiveHandle{aggregate_id});
  auto communicator = communicators_.find(aggregate.group);
  if (communicator == communicators_.end()) {
    throw RuntimeFailure("MPI clock sync: no communicator for process group '" + aggregate.group +
                         "'");
  }
  InFlight& in_flight = in_flight_.emplace_back();
  in_flight.aggregate = aggregate_id;
  in_flight.send[0] = aggregate.max_ready_us;
  // One MAX reduction serves both: the negated duration's maximum is the minimum.
  in_flight.send[1] = aggregate.combine == DurationCombine::kShortest ? -aggregate.duration_us
                                                                      : aggregate.duration_us;
  in_flight.shortest = aggregate.combine == DurationCombine::kShortest;
  MPI_Iallreduce(in_flight.send, in_flight.receive, 2, MPI_DOUBLE, MPI_MAX, communicator->second,
                 &in_flight.request);
  in_flight_of_aggregate_[aggregate_id] = in_flight_.size() - 1;
  pending_.push_back(in_flight_.size() - 1);
  ++reductions_;
}

void MpiClockSync::complete(InFlight& in_flight) {
  in_flight.done = true;
  ++completed_;
  auto& aggregate = table_.at(engine::CollectiveHandle{in_flight.aggregate});
  const double start = in_flight.receive[0];
  const double duration = in_flight.shortest ? -in_flight.receive[1] : in_flight.receive[1];
  aggregate.timing = engine::CollectiveTiming{start, start + duration};
}

std::optional<engine::CollectiveTiming> MpiClockSync::poll(engine::CollectiveHandle handle) {
  auto& aggregate = table_.at(handle);
  if (aggregate.timing)
    return aggregate.timing;
  auto found = in_flight_of_aggregate_.find(handle.id);
  if (found == in_flight_of_aggregate_.end())
    return std::nullopt;
  InFlight& in_flight = in_flight_[found->second];
  int flag = 0;
  MPI_Test(&in_flight.request, &flag, MPI_STATUS_IGNORE);
  if (flag)
    complete(in_flight);
  return aggregate.timing;
}

bool MpiClockSync::make_progress() {
  // Poll rather than block in MPI_Waitany, so that a cycle of waits across processes (a trace
  // that would deadlock for real) ends with an error after the stall timeout, not a hang.
  // While it waits, the process takes part in the deadlock watch: a cycle of waits ends in
  // seconds, not after the stall timeout (which still bounds a process that stops without
  // waiting, e.g. one stuck outside perfsim).
  constexpr auto kJoinWatchAfter = std::chrono::milliseconds(500);
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = now + stall_timeout_;
  auto join_watch_at = now + kJoinWatchAfter;
  auto pause = std::chrono::microseconds(1);
  while (true) {
    std::erase_if(pending_, [this](std::size_t index) { return in_flight_[index].done; });
    if (pending_.empty())
      return false;
    for (std::size_t index : pending_) {
      int flag = 0;
      MPI_Test(&in_flight_[index].request, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        complete(in_flight_[index]);
        return true;
      }
    }
    if (watch_.in_round() || std::chrono::steady_clock::now() > join_watch_at) {
      const DeadlockWatch::Verdict verdict = watch_.poll(/*done=*/false, completed_);
      if (verdict == DeadlockWatch::Verdict::kDeadlock)
        fail_deadlock();
      if (verdict != DeadlockWatch::Verdict::kWaiting)
        join_watch_at = std::chrono::steady_clock::now() + kJoinWatchAfter;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw RuntimeFailure("MPI clock sync: no collective completed for " +
                           std::to_string(stall_timeout_.count()) +
                           " s; another process is blocked (see its error) or the traces "
                           "deadlock across processes");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

void MpiClockSync::wait_for_all_processes() {
  auto pause = std::chrono::microseconds(50);
  while (true) {
    const DeadlockWatch::Verdict verdict = watch_.poll(/*done=*/true, completed_);
    if (verdict == DeadlockWatch::Verdict::kAllDone)
      return;
    if (verdict == DeadlockWatch::Verdict::kDeadlock)
      fail_deadlock();
    if (verdict == DeadlockWatch::Verdict::kWaiting) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(5000));
    }
  }
}

void MpiClockSync::fail_deadlock() const {
  // Every process reaches this verdict in the same watch round: one message, clean exit.
  throw AllRanksError(
      "the traces", "simulation",
      "deadlock across processes: the simulated ranks of " +
          std::to_string(watch_.not_done_processes()) +
          " MPI processes wait on collectives that can never complete (their traces' "
          "collectives wait on each other in a cycle across process groups; `perfsim simulate` "
          "in one process lists each blocked rank)");
}

}  // namespace perfsim::mpi
