// perfsim bench-parse: how fast execution traces parse, and how much faster the binary cache
// loads them. Best of N repeats, so the figures are the machine's, not its noise.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "io/input_file.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "trace_io/execution_trace_loader.hpp"
#include "trace_io/trace_cache.hpp"

namespace perfsim::cli {
namespace {

struct BenchParseOptions {
  std::vector<std::string> files;
  int repeats = 5;
  std::string cache_dir;  // "" = a fresh temporary directory, removed afterwards
};

double best_ms(int repeats, const std::function<void()>& work) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
  }
  return best;
}

struct FileFigures {
  std::size_t json_bytes = 0;
  std::size_t ops = 0;
  double read_ms = 0;        // file I/O, gunzip, tar
  double parse_ms = 0;       // JSON to Trace, as one load_execution_trace call
  double warm_parse_ms = 0;  // the same with a JSON parser reused from the previous load
  double cached_ms = 0;      // hash source, read and deserialize the cache file
};

FileFigures bench_file(const std::string& spec, int repeats, const std::string& cache_dir) {
  FileFigures figures;
  io::InputBytes input = io::read_input(spec);
  figures.json_bytes = input.bytes.size();
  figures.read_ms = best_ms(repeats, [&] { io::read_input(spec); });
  figures.parse_ms =
      best_ms(repeats, [&] { figures.ops = load_execution_trace(input).ops.size(); });
  ExecutionTraceReader reader;
  figures.warm_parse_ms = best_ms(repeats, [&] { reader.load(input); });
  auto parser = [](const io::InputBytes& bytes) { return load_execution_trace(bytes); };
  CachedTraceLoad warmup = load_trace_with_cache(spec, cache_dir, "pytorch-et", parser);
  for (const std::string& warning : warmup.warnings)
    std::cerr << "perfsim: warning: " << warning << "\n";
  bool all_hits = true;
  figures.cached_ms = best_ms(repeats, [&] {
    CachedTraceLoad load = load_trace_with_cache(spec, cache_dir, "pytorch-et", parser);
    all_hits = all_hits && load.cache_hit;
  });
  if (!all_hits)
    std::cerr << "perfsim: warning: " << spec
              << ": the cache missed, so the cached figure includes parsing\n";
  return figures;
}

// Removes the temporary cache directory however the benchmark ends (a bad file throws).
class RemoveOnExit {
 public:
  explicit RemoveOnExit(std::filesystem::path path) : path_(std::move(path)) {}
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;
  ~RemoveOnExit() {
    std::error_code ignored;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ignored);
  }

 private:
  std::filesystem::path path_;
};

int run_bench_parse(const BenchParseOptions& options) {
  namespace fs = std::filesystem;
  fs::path cache_dir = options.cache_dir;
  bool temporary = cache_dir.empty();
  if (temporary)
    cache_dir = fs::temp_directory_path() / ("perfsim-bench-parse-" + std::to_string(::getpid()));
  RemoveOnExit cleanup(temporary ? cache_dir : fs::path{});
  std::printf("best of %d repeats; MB = 1e6 bytes; cache in %s\n", options.repeats,
              cache_dir.string().c_str());
  std::printf("%-70s %10s %6s %8s %9s %7s %8s %9s %9s %8s %8s\n", "file", "json_bytes", "ops",
              "read_ms", "parse_ms", "MB/s", "warm_ms", "warm_MB/s", "cached_ms", "speedup",
              "vs_parse");
  for (const std::string& spec : options.files) {
    FileFigures f = bench_file(spec, options.repeats, cache_dir.string());
    double mb_per_s = static_cast<double>(f.json_bytes) / 1e6 / (f.parse_ms / 1e3);
    double warm_mb_per_s = static_cast<double>(f.json_bytes) / 1e6 / (f.warm_parse_ms / 1e3);
    double speedup = (f.read_ms + f.parse_ms) / f.cached_ms;
    double speedup_vs_parse = f.parse_ms / f.cached_ms;
    std::string name = spec.size() > 70 ? "..." + spec.substr(spec.size() - 67) : spec;
    std::printf("%-70s %10zu %6zu %8.2f %9.2f %7.1f %8.2f %9.1f %9.2f %7.1fx %7.1fx\n",
                name.c_str(), f.json_bytes, f.ops, f.read_ms, f.parse_ms, mb_per_s, f.warm_parse_ms,
                warm_mb_per_s, f.cached_ms, speedup, speedup_vs_parse);
  }
  std::printf(
      "speedup = (read_ms + parse_ms) / cached_ms, vs_parse = parse_ms / cached_ms; read = file "
      "I/O + gunzip + tar; warm = JSON parser reused across loads (ExecutionTraceReader); "
      "cached = hash the source file + read and deserialize the cache\n");
  return 0;
}

}  // namespace

void add_bench_parse_command(CLI::App& app, CommandRegistry& registry) {
  auto options = std::make_shared<BenchParseOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench-parse", "Time execution-trace JSON parsing (MB/s) and the binary trace cache");
  sub->add_option("files", options->files,
                  "execution traces: x.json, x.json.gz or archive.tar.gz:member")
      ->required();
  sub->add_option("--repeats", options->repeats, "repeats per measurement; the best is shown")
      ->default_val(5)
      ->check(CLI::PositiveNumber);
  sub->add_option("--cache-dir", options->cache_dir,
                  "cache directory (default: a temporary one, removed afterwards)");
  registry.add(sub, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_bench_parse(*options); });
}

}  // namespace perfsim::cli
