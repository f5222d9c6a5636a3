// The binary trace cache: a cached trace equals the parsed one field by field, a corrupt cache
// file is ignored and rewritten, and an unusable cache directory only warns.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>

#include "trace_io/execution_trace_loader.hpp"
#include "trace_io/trace_cache.hpp"

namespace perfsim {
namespace {

namespace fs = std::filesystem;

const std::string kResnetFile =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-resnet-2gpu/resnet_2gpu_et.json.gz";
const std::string kDlrmRank3 = std::string(PERFSIM_SHARED_DATA_DIR) +
                               "/traces/param-dlrm-8xV100/dlrm_pytorch_et.tar.gz:"
                               "dlrm_pytorch_et/dlrm_eg_3.json";

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::random_device random;
    path_ = fs::temp_directory_path() /
            ("perfsim_cache_test_" + std::to_string(::getpid()) + "_" + std::to_string(random()));
    fs::create_directories(path_);
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void expect_same_tensor(const TensorRef& a, const TensorRef& b) {
  EXPECT_EQ(a.tensor_id, b.tensor_id);
  EXPECT_EQ(a.storage_id, b.storage_id);
  EXPECT_EQ(a.offset_elements, b.offset_elements);
  EXPECT_EQ(a.numel, b.numel);
  EXPECT_EQ(a.element_bytes, b.element_bytes);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
}

void expect_same_comm(const CommInfo& a, const CommInfo& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.process_group, b.process_group);
  EXPECT_EQ(a.group_size, b.group_size);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.bytes_in, b.bytes_in);
  EXPECT_EQ(a.bytes_out, b.bytes_out);
  EXPECT_EQ(a.in_split_elements, b.in_split_elements);
  EXPECT_EQ(a.out_split_elements, b.out_split_elements);
  EXPECT_EQ(a.peer_rank, b.peer_rank);
  EXPECT_EQ(a.root_rank, b.root_rank);
  EXPECT_EQ(a.tag, b.tag);
}

void expect_same_kernel(const Kernel& a, const Kernel& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.category, b.category);
  EXPECT_EQ(a.correlation_id, b.correlation_id);
  EXPECT_EQ(a.measured_duration_us, b.measured_duration_us);
  EXPECT_EQ(a.measured_start_us, b.measured_start_us);
  EXPECT_EQ(a.launch_api, b.launch_api);
  EXPECT_EQ(a.measured_launch_us, b.measured_launch_us);
}

void expect_same_op(const Op& a, const Op& b) {
  SCOPED_TRACE("op " + std::to_string(a.id) + " " + a.name);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.parent_id, b.parent_id);
  EXPECT_EQ(a.child_ids, b.child_ids);
  EXPECT_EQ(a.thread_id, b.thread_id);
  EXPECT_EQ(a.is_annotation, b.is_annotation);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (std::size_t i = 0; i < a.inputs.size(); ++i)
    expect_same_tensor(a.inputs[i], b.inputs[i]);
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (std::size_t i = 0; i < a.outputs.size(); ++i)
    expect_same_tensor(a.outputs[i], b.outputs[i]);
  ASSERT_EQ(a.attributes.size(), b.attributes.size());
  for (std::size_t i = 0; i < a.attributes.size(); ++i) {
    EXPECT_EQ(a.attributes[i].name, b.attributes[i].name);
    EXPECT_EQ(a.attributes[i].value, b.attributes[i].value);
  }
  ASSERT_EQ(a.comm.has_value(), b.comm.has_value());
  if (a.comm)
    expect_same_comm(*a.comm, *b.comm);
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (std::size_t i = 0; i < a.kernels.size(); ++i)
    expect_same_kernel(a.kernels[i], b.kernels[i]);
  EXPECT_EQ(a.measured_start_us, b.measured_start_us);
  EXPECT_EQ(a.measured_duration_us, b.measured_duration_us);
}

void expect_same_trace(const Trace& a, const Trace& b) {
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.device_name, b.device_name);
  ASSERT_EQ(a.process_groups.size(), b.process_groups.size());
  for (std::size_t i = 0; i < a.process_groups.size(); ++i) {
    EXPECT_EQ(a.process_groups[i].name, b.process_groups[i].name);
    EXPECT_EQ(a.process_groups[i].ranks, b.process_groups[i].ranks);
    EXPECT_EQ(a.process_groups[i].description, b.process_groups[i].description);
  }
  ASSERT_EQ(a.measured_step.has_value(), b.measured_step.has_value());
  if (a.measured_step) {
    EXPECT_EQ(a.measured_step->name, b.measured_step->name);
    EXPECT_EQ(a.measured_step->start_us, b.measured_step->start_us);
    EXPECT_EQ(a.measured_step->duration_us, b.measured_step->duration_us);
  }
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i)
    expect_same_op(a.ops[i], b.ops[i]);
}

CachedTraceLoad load_et(const std::string& spec, const fs::path& cache_dir) {
  return load_trace_with_cache(
      spec, cache_dir.string(), "pytorch-et",
      [](const io::InputBytes& input) { return load_execution_trace(input); });
}

TEST(TraceCache, ResnetRoundTripEqualsTheParsedTrace) {
  ASSERT_TRUE(fs::exists(kResnetFile)) << "fixture missing: " << kResnetFile;
  TemporaryDirectory cache;
  Trace parsed = load_execution_trace_file(kResnetFile);

  CachedTraceLoad first = load_et(kResnetFile, cache.path());
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(first.warnings.empty());
  EXPECT_TRUE(fs::exists(first.cache_file));
  EXPECT_TRUE(first.cache_file.ends_with(".trace.bin"));

  CachedTraceLoad second = load_et(kResnetFile, cache.path());
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.cache_file, first.cache_file);
  expect_same_trace(parsed, second.trace);
  // The id index is rebuilt after loading.
  const Op* step = second.trace.find(6931);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->name, "ProfilerStep#5");
}

TEST(TraceCache, ArchiveMemberRoundTripKeepsCommunication) {
  TemporaryDirectory cache;
  Trace parsed = load_execution_trace_file(kDlrmRank3);
  load_et(kDlrmRank3, cache.path());
  CachedTraceLoad cached = load_et(kDlrmRank3, cache.path());
  ASSERT_TRUE(cached.cache_hit);
  expect_same_trace(parsed, cached.trace);
  EXPECT_EQ(cached.trace.rank, 3);
}

TEST(TraceCache, KeyDependsOnMemberAndParser) {
  std::string archive =
      std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-dlrm-8xV100/dlrm_pytorch_et.tar.gz";
  std::string rank0 = trace_cache_key(archive + ":dlrm_pytorch_et/dlrm_eg_0.json", "pytorch-et");
  std::string rank1 = trace_cache_key(archive + ":dlrm_pytorch_et/dlrm_eg_1.json", "pytorch-et");
  std::string kineto = trace_cache_key(archive + ":dlrm_pytorch_et/dlrm_eg_0.json", "kineto");
  EXPECT_EQ(rank0.size(), 16u);
  EXPECT_NE(rank0, rank1);
  EXPECT_NE(rank0, kineto);
  EXPECT_EQ(rank0, trace_cache_key(archive + ":dlrm_pytorch_et/dlrm_eg_0.json", "pytorch-et"));
}

// Every field of the model, including the ones an ET never fills (kernels, measured times).
TEST(TraceCache, EveryFieldSurvivesTheCache) {
  TemporaryDirectory cache;
  fs::path source = cache.path() / "source.bin";
  std::ofstream(source) << "any bytes: the parser below ignores them";
  Trace full;
  full.format = "synthetic";
  full.rank = 2;
  full.world_size = 4;
  full.device_name = "NVIDIA H100";
  full.measured_step = MeasuredStep{"ProfilerStep#7", 12.5, 1000.25};
  full.process_groups = {ProcessGroup{"tp/0", {0, 1}, "tensor parallel"}};
  Op op;
  op.id = 10;
  op.name = "aten::mm";
  op.parent_id = 9;
  op.child_ids = {11, 12};
  op.thread_id = 3;
  op.inputs = {TensorRef{1, 2, 3, 4, 2, "cuda:2", DType::kBFloat16, {2, 2}}};
  op.outputs = {TensorRef{5, 6, 0, 8, 4, "cpu", DType::kFloat32, {8}}};
  op.attributes = {{"i", std::int64_t{-7}}, {"d", 2.5}, {"s", std::string("text")}};
  CommInfo comm;
  comm.kind = CollectiveKind::kAllToAllv;
  comm.process_group = "tp/0";
  comm.group_size = 2;
  comm.dtype = DType::kFloat16;
  comm.bytes_in = 100;
  comm.bytes_out = 60;
  comm.in_split_elements = {20, 30};
  comm.out_split_elements = {10, 20};
  comm.peer_rank = 1;
  comm.root_rank = 0;
  comm.tag = 99;
  op.comm = comm;
  op.kernels = {
      Kernel{"sm90_gemm", 24, KernelCategory::kGemm, 77, 10.5, 3.0, "cudaLaunchKernel", 4.5}};
  op.measured_start_us = 1.5;
  op.measured_duration_us = 20.0;
  full.ops = {op};
  auto parser = [&](const io::InputBytes& input) {
    Trace copy = full;
    copy.source = input.source;
    return copy;
  };
  load_trace_with_cache(source.string(), cache.path().string(), "synthetic", parser);
  CachedTraceLoad cached =
      load_trace_with_cache(source.string(), cache.path().string(), "synthetic", parser);
  ASSERT_TRUE(cached.cache_hit);
  full.source = source.string();
  expect_same_trace(full, cached.trace);
}

TEST(TraceCache, CorruptCacheFileIsIgnoredAndRewritten) {
  TemporaryDirectory cache;
  CachedTraceLoad first = load_et(kDlrmRank3, cache.path());
  ASSERT_TRUE(fs::exists(first.cache_file));
  auto good_size = fs::file_size(first.cache_file);

  // One flipped byte in the payload.
  {
    std::fstream file(first.cache_file, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(good_size / 2));
    file.put('\x5a');
  }
  CachedTraceLoad flipped = load_et(kDlrmRank3, cache.path());
  EXPECT_FALSE(flipped.cache_hit) << "a damaged payload must not be used";
  EXPECT_EQ(flipped.trace.ops.size(), 1675u);
  EXPECT_EQ(fs::file_size(first.cache_file), good_size);
  EXPECT_TRUE(load_et(kDlrmRank3, cache.path()).cache_hit) << "the rewritten file is valid";

  // Truncated, then garbage of the right magic but a wrong size.
  fs::resize_file(first.cache_file, good_size / 3);
  EXPECT_FALSE(load_et(kDlrmRank3, cache.path()).cache_hit);
  std::ofstream(first.cache_file, std::ios::binary | std::ios::trunc) << "PSTRACE1 garbage";
  CachedTraceLoad garbage = load_et(kDlrmRank3, cache.path());
  EXPECT_FALSE(garbage.cache_hit);
  EXPECT_EQ(garbage.trace.ops.size(), 1675u);
  EXPECT_TRUE(load_et(kDlrmRank3, cache.path()).cache_hit);
}

std::string tiny_trace(int ops) {
  std::string nodes =
      R"({"name": "[pytorch|profiler|execution_graph|process]", "id": 1, "parent": 1,)"
      R"( "inputs": [], "input_shapes": [], "input_types": [], "outputs": [],)"
      R"( "output_shapes": [], "output_types": []})";
  for (int id = 2; id < ops + 1; ++id) {
    nodes += R"(, {"name": "aten::relu", "id": )" + std::to_string(id) +
             R"(, "parent": 1, "inputs": [], "input_shapes": [], "input_types": [],)"
             R"( "outputs": [], "output_shapes": [], "output_types": []})";
  }
  return R"({"schema": "1.0.1", "nodes": [)" + nodes + "]}";
}

TEST(TraceCache, ChangedSourceBytesMissTheCache) {
  TemporaryDirectory cache;
  fs::path source = cache.path() / "tiny.json";
  std::ofstream(source) << tiny_trace(2);
  EXPECT_FALSE(load_et(source.string(), cache.path() / "c").cache_hit);
  CachedTraceLoad hit = load_et(source.string(), cache.path() / "c");
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_EQ(hit.trace.ops.size(), 2u);
  std::ofstream(source, std::ios::trunc) << tiny_trace(3);
  CachedTraceLoad changed = load_et(source.string(), cache.path() / "c");
  EXPECT_FALSE(changed.cache_hit);
  EXPECT_EQ(changed.trace.ops.size(), 3u);
  EXPECT_NE(changed.cache_file, hit.cache_file);
}

TEST(TraceCache, UnusableCacheDirectoryIsAWarning) {
  TemporaryDirectory cache;
  fs::path blocker = cache.path() / "a_file";
  std::ofstream(blocker) << "not a directory";
  CachedTraceLoad load = load_et(kDlrmRank3, blocker / "cache");
  EXPECT_FALSE(load.cache_hit);
  EXPECT_EQ(load.trace.ops.size(), 1675u);
  ASSERT_EQ(load.warnings.size(), 1u);
  EXPECT_NE(load.warnings[0].find("cannot create trace cache directory"), std::string::npos)
      << load.warnings[0];
}

TEST(TraceCache, DefaultDirectoryFollowsTheEnvironment) {
  const char* before = std::getenv("PERFSIM_CACHE_DIR");
  std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
  ::setenv("PERFSIM_CACHE_DIR", "/some/where", 1);
  EXPECT_EQ(default_trace_cache_dir(), "/some/where");
  ::unsetenv("PERFSIM_CACHE_DIR");
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    EXPECT_EQ(default_trace_cache_dir(), std::string(home) + "/.cache/perfsim");
  }
  if (saved)
    ::setenv("PERFSIM_CACHE_DIR", saved->c_str(), 1);
}

}  // namespace
}  // namespace perfsim
