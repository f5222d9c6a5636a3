#include "io/input_file.hpp"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "perfsim/error.hpp"

namespace perfsim::io {
namespace {

constexpr std::size_t kTarBlockBytes = 512;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path, "", "cannot open file: " + std::string(std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad())
    throw InputError(path, "", "read error");
  return std::move(buffer).str();
}

bool has_gzip_magic(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(const std::string& compressed, const std::string& path) {
  z_stream stream{};
  // 16 + MAX_WBITS: gzip header; concatenated members are handled by the loop below.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    throw InputError(path, "", "zlib initialisation failed");
  }
  std::string out;
  out.reserve(compressed.size() * 4);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  char chunk[1 << 16];
  int status = Z_OK;
  while (true) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof(chunk);
    status = inflate(&stream, Z_NO_FLUSH);
    out.append(chunk, sizeof(chunk) - stream.avail_out);
    if (status == Z_STREAM_END) {
      if (stream.avail_in == 0)
        break;
      inflateReset(&stream);  // another gzip member follows
      continue;
    }
    if (status != Z_OK)
      break;
    if (stream.avail_in == 0 && stream.avail_out != 0) {
      status = Z_BUF_ERROR;
      break;
    }
  }
  std::size_t consumed = compressed.size() - stream.avail_in;
  inflateEnd(&stream);
  if (status != Z_STREAM_END) {
    throw InputError(path, "byte " + std::to_string(consumed),
                     status == Z_BUF_ERROR
                         ? "gzip stream is truncated"
                         : "gzip data is corrupt (zlib status " + std::to_string(status) + ")");
  }
  return out;
}

struct TarMember {
  std::string name;
  std::size_t offset = 0;
  std::size_t size = 0;
};

std::size_t parse_octal(const char* field, std::size_t width) {
  std::size_t value = 0;
  for (std::size_t i = 0; i < width && field[i] != '\0' && field[i] != ' '; ++i) {
    if (field[i] < '0' || field[i] > '7')
      return static_cast<std::size_t>(-1);
    value = value * 8 + static_cast<std::size_t>(field[i] - '0');
  }
  return value;
}

std::vector<TarMember> parse_tar(const std::string& bytes, const std::string& path) {
  std::vector<TarMember> members;
  std::size_t position = 0;
  std::string long_name;  // GNU ././@LongLink
  while (position + kTarBlockBytes <= bytes.size()) {
    const char* header = bytes.data() + position;
    bool zero_block = true;
    for (std::size_t i = 0; i < kTarBlockBytes; ++i) {
      if (header[i] != '\0') {
        zero_block = false;
        break;
      }
    }
    if (zero_block)
      return members;
    std::size_t size = parse_octal(header + 124, 12);
    if (size == static_cast<std::size_t>(-1)) {
      throw InputError(path, "tar header at byte " + std::to_string(position),
                       "invalid size field: not a tar archive");
    }
    char type = header[156];
    std::string name(header, strnlen(header, 100));
    std::string prefix(header + 345, strnlen(header + 345, 155));
    if (std::memcmp(header + 257, "ustar", 5) == 0 && !prefix.empty())
      name = prefix + "/" + name;
    std::size_t data = position + kTarBlockBytes;
    if (data + size > bytes.size()) {
      throw InputError(path, "tar member '" + name + "'", "archive is truncated");
    }
    if (type == 'L') {
      long_name.assign(bytes.data() + data, strnlen(bytes.data() + data, size));
    } else {
      if (!long_name.empty()) {
        name = long_name;
        long_name.clear();
      }
      if (type == '0' || type == '\0')
        members.push_back({name, data, size});
    }
    position = data + (size + kTarBlockBytes - 1) / kTarBlockBytes * kTarBlockBytes;
  }
  if (members.empty())
    throw InputError(path, "", "not a tar archive or archive is empty");
  return members;
}

std::string member_basename(const std::string& name) {
  auto slash = name.find_last_of('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

}  // namespace

bool is_archive_path(const std::string& path) {
  return ends_with(path, ".tar") || ends_with(path, ".tar.gz") || ends_with(path, ".tgz");
}

std::string read_file_decompressed(const std::string& path) {
  std::string raw = read_raw(path);
  return has_gzip_magic(raw) ? gunzip(raw, path) : raw;
}

std::vector<std::string> list_archive_members(const std::string& archive_path) {
  std::string bytes = read_file_decompressed(archive_path);
  std::vector<std::string> names;
  for (const TarMember& member : parse_tar(bytes, archive_path))
    names.push_back(member.name);
  return names;
}

std::vector<InputBytes> read_archive_members(const std::string& archive_path,
                                             const std::string& suffix) {
  std::string bytes = read_file_decompressed(archive_path);
  std::vector<InputBytes> result;
  for (const TarMember& member : parse_tar(bytes, archive_path)) {
    if (!suffix.empty() && !ends_with(member.name, suffix))
      continue;
    if (member_basename(member.name).rfind("._", 0) == 0)
      continue;  // macOS resource forks
    result.push_back({archive_path + ":" + member.name, bytes.substr(member.offset, member.size)});
  }
  return result;
}

InputBytes read_input(const std::string& spec) {
  // "archive.tar.gz:member" — split at the first ':' that follows an archive suffix.
  for (const char* suffix : {".tar.gz:", ".tgz:", ".tar:"}) {
    auto at = spec.find(suffix);
    if (at == std::string::npos)
      continue;
    std::string archive = spec.substr(0, at + std::strlen(suffix) - 1);
    std::string member = spec.substr(at + std::strlen(suffix));
    std::string bytes = read_file_decompressed(archive);
    for (const TarMember& entry : parse_tar(bytes, archive)) {
      if (entry.name == member || member_basename(entry.name) == member) {
        return {archive + ":" + entry.name, bytes.substr(entry.offset, entry.size)};
      }
    }
    throw InputError(archive, "member '" + member + "'", "no such member in the archive");
  }
  if (is_archive_path(spec)) {
    auto members = read_archive_members(spec);
    if (members.size() != 1) {
      throw InputError(spec, "",
                       "archive holds " + std::to_string(members.size()) + " files; name one as '" +
                           spec + ":MEMBER'");
    }
    return std::move(members.front());
  }
  return {spec, read_file_decompressed(spec)};
}

}  // namespace perfsim::io
