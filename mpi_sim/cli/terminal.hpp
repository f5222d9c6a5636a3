#pragma once
// Whether a person watches standard error, so that progress lines (rewritten in place with \r)
// are worth printing.
namespace perfsim::cli {

// True when standard error is a terminal, or when this process runs under Open MPI's mpirun on
// the machine whose terminal mpirun writes to: Open MPI hands its processes a pipe and copies
// it to its own standard error, so isatty() alone is false under mpirun even at a terminal.
bool stderr_reaches_terminal();

}  // namespace perfsim::cli
