#include "mpi_sim/mpi/mpi_clock_sync.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "mpi_sim/mpi/distributed_run.hpp"
#include "perfsim/error.hpp"

namespace perfsim::mpi {
namespace {

std::string stall_message(std::chrono::seconds timeout) {
  return "MPI clock sync: no collective completed for " + std::to_string(timeout.count()) +
         " s; another process is blocked (see its error) or the traces deadlock across "
         "processes";
}

// How long every process must have waited, with no reduction completing anywhere, before the
// watch calls it a deadlock.
constexpr std::chrono::milliseconds kMinStall(1000);

}  // namespace

WaitMode wait_mode_of_this_node() {
  // The launchers' own count of the processes they started on this node (Open MPI, then MPICH
  // and Intel MPI): no collective needed, and each process may decide alone.
  for (const char* variable : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* value = std::getenv(variable);
    if (value == nullptr)
      continue;
    const int local_processes = std::atoi(value);
    const int local_cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    return local_processes > local_cores ? WaitMode::kYieldCore : WaitMode::kBlock;
  }
  return WaitMode::kBlock;
}

MpiClockSync::MpiClockSync(MPI_Comm world, std::vector<int> process_of_rank,
                           const std::vector<std::pair<std::string, std::vector<int>>>& groups,
                           WaitMode wait_mode, std::chrono::seconds stall_timeout)
    : world_(world),
      wait_mode_(wait_mode),
      stall_timeout_(stall_timeout),
      watch_(world, kMinStall),
      process_of_rank_(std::move(process_of_rank)),
      table_([this](int rank) { return process_of_rank_.at(rank) == my_process_; }) {
  MPI_Comm_rank(world_, &my_process_);
  if (wait_mode_ == WaitMode::kBlock)
    stall_alarm_.emplace(stall_timeout_, stall_message(stall_timeout_));
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
      note_resolved(handle);
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
  std::size_t slot = slots_.size();
  if (free_slots_.empty()) {
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  InFlight& in_flight = slots_[slot];
  in_flight.aggregate = aggregate_id;
  in_flight.send[0] = aggregate.max_ready_us;
  // One MAX reduction serves both: the negated duration's maximum is the minimum.
  in_flight.send[1] = aggregate.combine == DurationCombine::kShortest ? -aggregate.duration_us
                                                                      : aggregate.duration_us;
  in_flight.shortest = aggregate.combine == DurationCombine::kShortest;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(in_flight.send, in_flight.receive, 2, MPI_DOUBLE, MPI_MAX, communicator->second,
                 &request);
  requests_.push_back(request);
  slot_of_request_.push_back(slot);
  ++reductions_;
}

void MpiClockSync::complete(std::size_t slot) {
  const InFlight& in_flight = slots_[slot];
  ++completed_;
  auto& aggregate = table_.at(engine::CollectiveHandle{in_flight.aggregate});
  const double start = in_flight.receive[0];
  const double duration = in_flight.shortest ? -in_flight.receive[1] : in_flight.receive[1];
  aggregate.timing = engine::CollectiveTiming{start, start + duration};
  note_resolved(engine::CollectiveHandle{in_flight.aggregate});
  free_slots_.push_back(slot);
}

std::optional<engine::CollectiveTiming> MpiClockSync::poll(engine::CollectiveHandle handle) {
  // Completion is learnt in test_progress/make_progress, which report it to the scheduler.
  return table_.take_timing(handle);
}

MpiClockSync::Completed MpiClockSync::take_completed(int count) {
  Completed completed;
  if (count == MPI_UNDEFINED)
    return completed;
  for (int i = 0; i < count; ++i) {
    const auto index = static_cast<std::size_t>(indices_[static_cast<std::size_t>(i)]);
    if (index == 0) {
      completed.watch_round = true;
    } else {
      complete(slot_of_request_[index]);
      completed.reduction = true;
    }
  }
  // MPI set the completed entries to MPI_REQUEST_NULL: swap them out, keeping entry 0.
  for (std::size_t index = requests_.size(); index-- > 1;) {
    if (requests_[index] != MPI_REQUEST_NULL)
      continue;
    requests_[index] = requests_.back();
    slot_of_request_[index] = slot_of_request_.back();
    requests_.pop_back();
    slot_of_request_.pop_back();
  }
  return completed;
}

void MpiClockSync::test_progress() {
  if (requests_.size() < 2)
    return;
  const int count = static_cast<int>(requests_.size() - 1);
  indices_.resize(requests_.size());
  int done = 0;
  // The reductions only (entry 0, a watch round joined during an earlier wait, completes when
  // this process waits again).
  MPI_Testsome(count, requests_.data() + 1, &done, indices_.data(), MPI_STATUSES_IGNORE);
  if (done != MPI_UNDEFINED) {
    for (int i = 0; i < done; ++i)
      ++indices_[static_cast<std::size_t>(i)];
  }
  take_completed(done);
}

int MpiClockSync::wait_for_some(bool done) {
  const int count = static_cast<int>(requests_.size());
  indices_.resize(requests_.size());
  int completed = 0;
  const auto join_watch = [&] {
    watch_.join(done, completed_);
    requests_[0] = watch_.request();
  };
  if (wait_mode_ == WaitMode::kBlock) {
    // The round goes into the wait: it completes once every process waits.
    join_watch();
    if (!done)
      stall_alarm_->wait_begins();
    MPI_Waitsome(count, requests_.data(), &completed, indices_.data(), MPI_STATUSES_IGNORE);
    stall_alarm_->wait_ends();
    return completed;
  }
  // Sharing cores, a process whose ranks wait joins the watch only after waiting a while, as
  // rounds that every waiting process joins at once would keep the cores busy with reductions
  // whenever all happen to wait; a process that is done joins at once and sleeps longer
  // between looks, leaving the cores to those that simulate.
  constexpr auto kJoinWatchAfter = std::chrono::milliseconds(500);
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = now + stall_timeout_;
  const auto join_watch_at = done ? now : now + kJoinWatchAfter;
  auto pause = std::chrono::microseconds(done ? 50 : 1);
  const auto longest_pause = std::chrono::microseconds(done ? 5000 : 1000);
  while (true) {
    if (watch_.request() == MPI_REQUEST_NULL && std::chrono::steady_clock::now() >= join_watch_at)
      join_watch();
    MPI_Testsome(count, requests_.data(), &completed, indices_.data(), MPI_STATUSES_IGNORE);
    if (completed != 0)
      return completed;
    if (!done && std::chrono::steady_clock::now() > deadline)
      throw RuntimeFailure(stall_message(stall_timeout_));
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, longest_pause);
  }
}

bool MpiClockSync::make_progress() {
  // Nothing outstanding across processes: every collective the blocked ranks wait on needs a
  // post from a rank of this process, itself blocked.
  if (requests_.size() < 2)
    return false;
  while (true) {
    const Completed completed = take_completed(wait_for_some(/*done=*/false));
    if (completed.watch_round && watch_.finish_round() == DeadlockWatch::Verdict::kDeadlock)
      fail_deadlock();
    if (completed.reduction)
      return true;
  }
}

void MpiClockSync::wait_for_all_processes() {
  // Every reduction of this process has completed (its ranks finished), so only the watch's
  // rounds remain in the array. No stall timeout: the others may simulate for long; the watch
  // ends a cycle of waits.
  while (true) {
    const Completed completed = take_completed(wait_for_some(/*done=*/true));
    if (!completed.watch_round)
      continue;
    const DeadlockWatch::Verdict verdict = watch_.finish_round();
    if (verdict == DeadlockWatch::Verdict::kAllDone)
      return;
    if (verdict == DeadlockWatch::Verdict::kDeadlock)
      fail_deadlock();
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
