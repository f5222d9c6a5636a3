#include "mpi_sim/mpi/text_exchange.hpp"

#include <vector>

#include "perfsim/error.hpp"

namespace perfsim::mpi {

std::string gather_text(MPI_Comm world, const std::string& local) {
  int size = 0, me = 0;
  MPI_Comm_size(world, &size);
  MPI_Comm_rank(world, &me);
  int length = static_cast<int>(local.size());
  std::vector<int> lengths(me == 0 ? size : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world);
  std::vector<int> offsets(lengths.size(), 0);
  long total = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    offsets[i] = static_cast<int>(total);
    total += lengths[i];
  }
  if (total > 2'000'000'000L)
    throw RuntimeFailure("text gather exceeds 2 GB");
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Gatherv(local.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, world);
  return all;
}

std::string broadcast_text_from_root(MPI_Comm world, std::string text) {
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, world);
  text.resize(static_cast<std::size_t>(length));
  MPI_Bcast(text.data(), length, MPI_CHAR, 0, world);
  return text;
}

}  // namespace perfsim::mpi
