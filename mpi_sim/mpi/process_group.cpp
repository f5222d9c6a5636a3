#include "mpi_sim/mpi/process_group.hpp"

#include "mpi_sim/mpi/process_packing.hpp"
#include "mpi_sim/mpi/text_exchange.hpp"

namespace perfsim::mpi {

ProcessGroup::ProcessGroup(MPI_Comm communicator) : communicator_(communicator) {
  MPI_Comm_rank(communicator_, &rank_);
  MPI_Comm_size(communicator_, &size_);
}

void ProcessGroup::barrier() const {
  if (!alone())
    MPI_Barrier(communicator_);
}

void ProcessGroup::quiet_barrier() const {
  if (!alone())
    mpi::quiet_barrier(communicator_);
}

std::string ProcessGroup::broadcast_text_from_root(std::string text) const {
  if (alone())
    return text;
  return mpi::broadcast_text_from_root(communicator_, std::move(text));
}

long long ProcessGroup::sum_on_root(long long value) const {
  if (alone())
    return value;
  long long sum = 0;
  MPI_Reduce(&value, &sum, 1, MPI_LONG_LONG, MPI_SUM, 0, communicator_);
  return sum;
}

}  // namespace perfsim::mpi
