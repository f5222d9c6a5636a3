#include "mpi_sim/mpi/process_packing.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace perfsim::mpi {

ProcessPacking pack_ranks(int world_size, int mpi_size, int processes_per_node,
                          int cores_per_node) {
  ProcessPacking packing;
  packing.processes_per_node = std::max(1, processes_per_node);
  packing.cores_per_node = std::max(1, cores_per_node);
  int usable = std::max(1, mpi_size);
  if (packing.processes_per_node > packing.cores_per_node) {
    // Integer arithmetic on purpose: 64 processes on 2 cores gives exactly 2 active ones.
    usable = std::max(1, static_cast<int>(static_cast<long>(mpi_size) * packing.cores_per_node /
                                          packing.processes_per_node));
  }
  const int wanted = std::max(1, world_size);
  packing.ranks_per_process = (wanted + usable - 1) / usable;
  packing.active_processes = (wanted + packing.ranks_per_process - 1) / packing.ranks_per_process;
  const int unpacked_ranks_per_process = (wanted + mpi_size - 1) / std::max(1, mpi_size);
  packing.packed = packing.ranks_per_process != unpacked_ranks_per_process;
  return packing;
}

ProcessPacking choose_packing(MPI_Comm world, int world_size) {
  int mpi_size = 1;
  MPI_Comm_size(world, &mpi_size);
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_processes = 1;
  MPI_Comm_size(node, &local_processes);
  MPI_Comm_free(&node);
  const int local_cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  int most_processes = local_processes;
  int fewest_cores = local_cores;
  MPI_Allreduce(&local_processes, &most_processes, 1, MPI_INT, MPI_MAX, world);
  MPI_Allreduce(&local_cores, &fewest_cores, 1, MPI_INT, MPI_MIN, world);
  return pack_ranks(world_size, mpi_size, most_processes, fewest_cores);
}

void quiet_barrier(MPI_Comm world) {
  MPI_Request request;
  MPI_Ibarrier(world, &request);
  auto pause = std::chrono::microseconds(50);
  while (true) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
}

}  // namespace perfsim::mpi
