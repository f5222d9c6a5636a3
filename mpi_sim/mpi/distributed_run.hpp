#pragma once
// Runs the simulated ranks of every MPI process: checks that collectives match across ranks,
// builds the group communicators, traverses the local ranks and gathers every rank's result
// on process 0.
#include <mpi.h>

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "mpi_sim/mpi/mpi_clock_sync.hpp"
#include "perfsim/error.hpp"
#include "perfsim/host_overheads.hpp"
#include "perfsim/rank_result.hpp"

namespace perfsim::mpi {

// An error every process raises identically (so only process 0 needs to print it and no
// process needs to abort the others).
class AllRanksError : public InputError {
 public:
  using InputError::InputError;
};

// Which MPI process simulates each rank: K consecutive ranks per process.
std::vector<int> block_placement(int world_size, int ranks_per_process);
// The ranks `placement` gives to MPI process `process`, ascending.
std::vector<int> ranks_placed_on(std::span<const int> placement, int process);

struct CollectiveCheck {
  // The hashes disagreed, so the signatures were gathered on process 0 and compared there (a
  // run whose collectives match only takes part in one reduction).
  bool details_gathered = false;
};

// Verifies that collectives match across all simulated ranks (any process layout): one
// reduction of per-group hashes (collective_match_residue) and, only when they disagree, the
// signatures gathered on process 0 to name the mismatch. Throws AllRanksError on every process
// with the first mismatch.
CollectiveCheck check_collectives(MPI_Comm world,
                                  std::span<const engine::RankProgram> local_programs,
                                  int world_size);

struct DistributedOptions {
  bool record_timeline = false;
  std::chrono::seconds stall_timeout{120};
  // How a process with no runnable rank waits; wait_mode_of_this_node() when unset. A caller
  // that has counted the processes per node already (choose_packing) passes it.
  std::optional<WaitMode> wait_mode;
  engine::ProgressCallback progress;  // this process's ranks, about twice a second
  std::chrono::milliseconds progress_interval = engine::kDefaultProgressInterval;
  // With record_timeline and timeline_wanted set: process 0's timeline_sink receives the wanted
  // ranks' timelines one at a time (timeline_stream.hpp) and the returned results carry none.
  std::function<bool(int)> timeline_wanted;
  std::function<void(const RankResult&)> timeline_sink;
};

struct DistributedStats {
  std::size_t communicators = 0;  // on this process
  std::size_t reductions = 0;     // MPI reductions this process started
};

// Traverses the local programs; returns all ranks' results (by rank) on process 0 and an
// empty vector elsewhere.
std::vector<RankResult> run_distributed(MPI_Comm world,
                                        std::span<const engine::RankProgram> local_programs,
                                        const std::vector<int>& process_of_rank,
                                        const HostOverheads& overheads,
                                        const DistributedOptions& options,
                                        DistributedStats* stats = nullptr);

}  // namespace perfsim::mpi
