#pragma once
// Output files written whole or not at all. Every output of perfsim (results, timelines,
// generated traces, fitted assets, sweep tables) goes to a temporary file in the target's
// directory, is flushed to disk, and is renamed over the target only when every byte made it:
// a full disk, a read-only directory or a killed process leaves the previous file (or none),
// never half a file. A target that is not a regular file (/dev/null, /dev/stdout, a FIFO) is
// written in place, since it cannot be renamed over. Failures throw RuntimeFailure naming the
// file and the system's reason (the command line maps it to exit code 3).
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string_view>

namespace perfsim::io {

void write_file_atomically(const std::filesystem::path& target, std::string_view bytes);

// Streams the content into `write`, passed to the file 1 MiB at a time (never held whole); a
// failed write (ENOSPC) throws out of `write` and fails the whole write.
void write_file_atomically(const std::filesystem::path& target,
                           const std::function<void(std::ostream&)>& write);

// Checks before a long computation that `target` will be writable: its directory exists and
// accepts a new file, or it is a non-regular file open for writing. Throws RuntimeFailure.
void check_writable(const std::filesystem::path& target);

}  // namespace perfsim::io
