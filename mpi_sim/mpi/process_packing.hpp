#pragma once
// How many simulated ranks each MPI process takes. One rank per process is the natural layout on
// a cluster, but `mpirun -n 64` on a 2-core laptop oversubscribes the cores 32-fold: every
// cross-process collective then waits for the scheduler to run each member in turn, and the
// simulation is latency-bound on context switches. Packing ranks onto as many processes as there
// are cores turns most collectives into in-process ones; the remaining processes stay idle.
#include <mpi.h>

namespace perfsim::mpi {

struct ProcessPacking {
  int ranks_per_process = 1;
  int active_processes = 1;    // processes that hold at least one simulated rank
  int processes_per_node = 1;  // the most MPI processes sharing one node
  int cores_per_node = 1;      // the fewest hardware threads of any node
  bool packed = false;         // true when oversubscription changed the default layout
};

// The pure policy: without oversubscription ceil(world / processes) ranks per process;
// oversubscribed by a factor f = processes_per_node / cores_per_node, only processes / f of
// them (at least one) take ranks.
ProcessPacking pack_ranks(int world_size, int mpi_size, int processes_per_node, int cores_per_node);

// Measures processes per node (MPI_Comm_split_type) and hardware threads on every process, and
// applies pack_ranks; identical on all processes.
ProcessPacking choose_packing(MPI_Comm world, int world_size);

// A barrier that sleeps between polls: idle processes wait here instead of spinning in a
// blocking collective and stealing cores from the processes that simulate.
void quiet_barrier(MPI_Comm world);

}  // namespace perfsim::mpi
