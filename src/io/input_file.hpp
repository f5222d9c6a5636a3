#pragma once
// Reading trace inputs as bytes: plain files, gzip files (.gz) and members of tar archives
// (.tar, .tar.gz, .tgz), decompressed in memory. A member is named "archive.tar.gz:path/in/tar".
#include <string>
#include <vector>

namespace perfsim::io {

struct InputBytes {
  std::string source;  // what error messages name: "file" or "archive:member"
  std::string bytes;
};

// Reads `spec`: a path, or "archive:member" for a tar member. A tar archive named without a
// member must hold exactly one regular file. Throws InputError naming the file on I/O errors,
// corrupt gzip data, a truncated archive or a missing member.
InputBytes read_input(const std::string& spec);

// Regular-file members of a tar archive (optionally gzip-compressed), in archive order.
std::vector<std::string> list_archive_members(const std::string& archive_path);

// Every regular-file member whose name ends with `suffix`, read in archive order.
std::vector<InputBytes> read_archive_members(const std::string& archive_path,
                                             const std::string& suffix = "");

bool is_archive_path(const std::string& path);

// Raw file bytes, gunzipped when the content starts with the gzip magic.
std::string read_file_decompressed(const std::string& path);

}  // namespace perfsim::io
