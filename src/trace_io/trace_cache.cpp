#include "trace_io/trace_cache.hpp"

#include <unistd.h>

#include <cereal/archives/binary.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "perfsim/error.hpp"
#include "perfsim/trace_serialization.hpp"
#include "trace_io/content_hash.hpp"
#include "trace_io/execution_trace_loader.hpp"

namespace perfsim {
namespace {

namespace fs = std::filesystem;

// File layout: magic (8 bytes), payload size (8), payload hash (8), payload (cereal binary).
constexpr char kMagic[8] = {'P', 'S', 'T', 'R', 'A', 'C', 'E', '1'};
constexpr std::size_t kHeaderBytes = 24;
constexpr std::uint64_t kPayloadSeed = 0x7065726673696dULL;  // "perfsim"

struct SourceParts {
  std::string file;
  std::string member;  // "" for a plain file
};

// "archive.tar.gz:member" splits as io::read_input splits it.
SourceParts split_spec(const std::string& spec) {
  for (const char* suffix : {".tar.gz:", ".tgz:", ".tar:"}) {
    auto at = spec.find(suffix);
    if (at == std::string::npos)
      continue;
    std::size_t archive_end = at + std::strlen(suffix) - 1;
    return {spec.substr(0, archive_end), spec.substr(archive_end + 1)};
  }
  return {spec, ""};
}

std::optional<std::string> try_read_whole_file(const std::string& path) {
  std::ifstream stream(path, std::ios::binary | std::ios::ate);
  if (!stream)
    return std::nullopt;
  std::streamoff size = stream.tellg();
  if (size < 0)
    return std::nullopt;
  std::string bytes(static_cast<std::size_t>(size), '\0');
  stream.seekg(0);
  if (!stream.read(bytes.data(), size))
    return std::nullopt;
  return bytes;
}

std::string read_whole_file(const std::string& path) {
  std::optional<std::string> bytes = try_read_whole_file(path);
  if (!bytes)
    throw InputError(path, "", "cannot read file");
  return std::move(*bytes);
}

// Lets cereal read the payload in place instead of through a copy in a stringstream.
class MemoryBuffer : public std::streambuf {
 public:
  explicit MemoryBuffer(std::string_view bytes) {
    char* begin = const_cast<char*>(bytes.data());  // the get area is only read
    setg(begin, begin, begin + bytes.size());
  }

 protected:
  // cereal reads field by field; one bounded memcpy per read beats the generic loop.
  std::streamsize xsgetn(char* out, std::streamsize count) override {
    std::streamsize available = egptr() - gptr();
    std::streamsize taken = count < available ? count : available;
    if (taken <= 0)
      return 0;  // an empty vector reads into a null pointer: memcpy must not see it
    std::memcpy(out, gptr(), static_cast<std::size_t>(taken));
    setg(eback(), gptr() + taken, egptr());
    return taken;
  }
};

void put_u64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::uint64_t get_u64(const char* in) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

// The cached Trace, or nullopt when the file is absent or not a valid cache file.
std::optional<Trace> read_cache_file(const std::string& path) {
  std::optional<std::string> file_bytes = try_read_whole_file(path);
  if (!file_bytes)
    return std::nullopt;
  const std::string& bytes = *file_bytes;
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  std::uint64_t payload_size = get_u64(bytes.data() + 8);
  std::uint64_t payload_hash = get_u64(bytes.data() + 16);
  if (payload_size != bytes.size() - kHeaderBytes)
    return std::nullopt;
  std::string_view payload(bytes.data() + kHeaderBytes, payload_size);
  if (trace_io::hash_bytes(payload, kPayloadSeed) != payload_hash)
    return std::nullopt;
  try {
    MemoryBuffer buffer(payload);
    std::istream input(&buffer);
    cereal::BinaryInputArchive archive(input);
    Trace trace;
    archive(trace);
    return trace;
  } catch (const std::exception&) {
    return std::nullopt;  // a payload from an incompatible build: rebuild it
  }
}

// Writes through a temporary file and a rename, so a reader never sees half a file.
std::optional<std::string> write_cache_file(const std::string& path, const Trace& trace) {
  std::ostringstream payload_stream;
  {
    cereal::BinaryOutputArchive archive(payload_stream);
    archive(trace);
  }
  std::string payload = std::move(payload_stream).str();
  std::string bytes(kMagic, sizeof kMagic);
  put_u64(bytes, payload.size());
  put_u64(bytes, trace_io::hash_bytes(payload, kPayloadSeed));
  bytes += payload;
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return "cannot write trace cache file " + temporary;
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out)
      return "cannot write trace cache file " + temporary;
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) {
    fs::remove(temporary, error);
    return "cannot rename trace cache file into " + path;
  }
  return std::nullopt;
}

std::string key_for(const SourceParts& parts, const std::string& raw_bytes,
                    std::string_view parser_name) {
  std::uint64_t hash = trace_io::hash_bytes(raw_bytes, kTraceSerializationVersion);
  hash = trace_io::hash_bytes(parts.member, hash);
  hash = trace_io::hash_bytes(parser_name, hash);
  return trace_io::hash_hex(hash);
}

}  // namespace

std::string default_trace_cache_dir() {
  if (const char* dir = std::getenv("PERFSIM_CACHE_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/perfsim";
  return "";
}

std::string trace_cache_key(const std::string& spec, std::string_view parser_name) {
  SourceParts parts = split_spec(spec);
  return key_for(parts, read_whole_file(parts.file), parser_name);
}

CachedTraceLoad load_trace_with_cache(const std::string& spec, const std::string& cache_dir,
                                      std::string_view parser_name, const TraceParser& parser) {
  CachedTraceLoad result;
  if (cache_dir.empty()) {
    result.warnings.push_back("no trace cache directory (set PERFSIM_CACHE_DIR or HOME)");
    result.trace = parser(io::read_input(spec));
    result.trace.source = spec;
    return result;
  }
  SourceParts parts = split_spec(spec);
  std::string key = key_for(parts, read_whole_file(parts.file), parser_name);
  result.cache_file = (fs::path(cache_dir) / (key + ".trace.bin")).string();
  if (std::optional<Trace> cached = read_cache_file(result.cache_file)) {
    result.trace = std::move(*cached);
    result.trace.source = spec;
    result.cache_hit = true;
    return result;
  }
  result.trace = parser(io::read_input(spec));
  result.trace.source = spec;  // as on a cache hit, whatever path wrote the cache file
  std::error_code error;
  fs::create_directories(cache_dir, error);
  if (error) {
    result.warnings.push_back("cannot create trace cache directory " + cache_dir + ": " +
                              error.message());
    return result;
  }
  if (auto problem = write_cache_file(result.cache_file, result.trace))
    result.warnings.push_back(*problem);
  return result;
}

Trace load_trace_cached(const std::string& spec, const std::string& cache_dir,
                        std::optional<int> rank) {
  CachedTraceLoad load = load_trace_with_cache(
      spec, cache_dir, "pytorch-et",
      [](const io::InputBytes& input) { return load_execution_trace(input); });
  for (const std::string& warning : load.warnings)
    std::cerr << "perfsim: warning: " << warning << "\n";
  if (rank)
    load.trace.rank = *rank;
  return std::move(load.trace);
}

}  // namespace perfsim
