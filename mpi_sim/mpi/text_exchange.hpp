#pragma once
// Text between MPI processes, for decisions every process must share (the fold proof).
#include <mpi.h>

#include <string>

namespace perfsim::mpi {

// Every process's text concatenated in process order on process 0; "" on the others.
std::string gather_text(MPI_Comm world, const std::string& local);

// Process 0's text on every process.
std::string broadcast_text_from_root(MPI_Comm world, std::string text);

}  // namespace perfsim::mpi
