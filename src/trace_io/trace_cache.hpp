#pragma once
// A binary cache of parsed traces. The key hashes the source file's raw bytes, the archive
// member name, the parser's name and kTraceSerializationVersion; the value is the Trace in
// cereal's binary format at <cache_dir>/<key>.trace.bin, behind a header that holds the payload
// size and hash. A cache file that is missing, truncated, corrupt or from another version is
// ignored and rewritten. A cache directory that cannot be created or written is a warning:
// the trace is still parsed and returned.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/input_file.hpp"
#include "perfsim/trace.hpp"

namespace perfsim {

// $PERFSIM_CACHE_DIR, else $HOME/.cache/perfsim; "" when neither is set (no caching).
std::string default_trace_cache_dir();

using TraceParser = std::function<Trace(const io::InputBytes&)>;

struct CachedTraceLoad {
  Trace trace;
  bool cache_hit = false;
  std::string cache_file;             // "" when caching was off
  std::vector<std::string> warnings;  // cache problems that did not stop the load
};

// `parser_name` distinguishes parsers of the same bytes ("pytorch-et", "kineto", ...).
// The returned trace's source is `spec`, from the cache or not.
// Parse errors of the source propagate as InputError.
CachedTraceLoad load_trace_with_cache(const std::string& spec, const std::string& cache_dir,
                                      std::string_view parser_name, const TraceParser& parser);

// An execution trace through the cache. `rank`, when given, replaces the recorded rank (as in
// load_execution_trace). Warnings go to std::cerr, prefixed "perfsim: warning:".
Trace load_trace_cached(const std::string& spec,
                        const std::string& cache_dir = default_trace_cache_dir(),
                        std::optional<int> rank = std::nullopt);

// Key of `spec` for `parser_name`: what names its cache file.
std::string trace_cache_key(const std::string& spec, std::string_view parser_name);

}  // namespace perfsim
