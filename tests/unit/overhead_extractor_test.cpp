// Host overheads T1..T5 (seed 000 Sec. 4.3.3, Fig. 4.6) on hand-built traces with known gaps,
// 1.5 IQR outlier removal (seed 000 Sec. 4.4.2), merging into a shared set, and the JSON asset.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "overheads/overhead_asset.hpp"
#include "overheads/overhead_extractor.hpp"
#include "overheads/overhead_samples.hpp"
#include "perfsim/error.hpp"

namespace perfsim::overheads {
namespace {

using Samples = std::vector<double>;

// Builds a Trace op by op; times in microseconds.
class TraceBuilder {
 public:
  std::int64_t op(const std::string& name, double start_us, double duration_us,
                  std::int64_t thread = 1, std::int64_t parent = kNoParent,
                  bool annotation = false) {
    Op op;
    op.id = static_cast<std::int64_t>(trace_.ops.size());
    op.name = name;
    op.thread_id = thread;
    op.parent_id = parent;
    op.is_annotation = annotation;
    op.measured_start_us = start_us;
    op.measured_duration_us = duration_us;
    if (parent != kNoParent)
      trace_.ops[static_cast<std::size_t>(parent)].child_ids.push_back(op.id);
    trace_.ops.push_back(op);
    return op.id;
  }
  // A runtime call of op `owner`; with `launches`, it issues one kernel.
  void call(std::int64_t owner, const std::string& api, double start_us, double duration_us,
            bool launches = true) {
    Op& op = trace_.ops[static_cast<std::size_t>(owner)];
    std::int64_t correlation = next_correlation_++;
    op.runtime_calls.push_back({api, start_us, duration_us, correlation});
    if (launches) {
      Kernel kernel;
      kernel.name = "k" + std::to_string(correlation);
      kernel.correlation_id = correlation;
      kernel.launch_api = api;
      kernel.measured_launch_us = duration_us;
      op.kernels.push_back(kernel);
    }
  }
  Trace& trace() { return trace_; }

 private:
  Trace trace_;
  std::int64_t next_correlation_ = 1;
};

// Profiler CPU overhead c = 2 us (LaunchParameters default, seed 000 Sec. 4.3.3).
Trace known_gaps_trace() {
  TraceBuilder b;
  b.trace().measured_step = MeasuredStep{"ProfilerStep#1", 0, 1000};
  // A [100,130]: launches [105,110] and [114,118], then a cudaStreamWaitEvent [120,121].
  std::int64_t a = b.op("A", 100, 30);
  b.call(a, "cudaLaunchKernel", 105, 5);
  b.call(a, "cudaLaunchKernel", 114, 4);
  b.call(a, "cudaStreamWaitEvent", 120, 1, false);
  // B [140,150] launches nothing; child [142,145].
  std::int64_t bee = b.op("B", 140, 10);
  b.op("B_child", 142, 3, 1, bee);
  // annotation [155,200] holding A [160,180]; C [162,170] launches [164,168]; A then copies
  // [172,175].
  std::int64_t annotation = b.op("## block ##", 155, 45, 1, kNoParent, true);
  std::int64_t a2 = b.op("A", 160, 20, 1, annotation);
  std::int64_t c = b.op("C", 162, 8, 1, a2);
  b.call(c, "cudaLaunchKernel", 164, 4);
  b.call(a2, "cudaMemcpyAsync", 172, 3);
  // D [300,305] on another thread: T1 spans threads (the engine's one CPU clock), from the
  // end of the last top-level op (A at 180).
  b.op("D", 300, 5, 2);
  // E lies outside the step window: ignored.
  b.op("E", 2000, 10);
  return b.trace();
}

TEST(OverheadSamples, KnownGapsGiveExactT1ToT5) {
  OverheadSamples samples = collect_overhead_samples(known_gaps_trace(), LaunchParameters{});
  ASSERT_EQ(samples.per_op.size(), 3u);  // A, B, D: C is not top-level, E is outside the step
  const OpSamples& a = samples.per_op.at("A");
  // T1 150 -> 160 holds the annotation's start: 10 - 2 * (1 + 1).
  EXPECT_EQ(a.t1_us, (Samples{6}));
  // T2: 105 - 100; second A: 164 - 160 - 2 (C starts before the launch).
  EXPECT_EQ(a.t2_us, (Samples{5, 2}));
  // T3: 130 - 118 - 2 (the cudaStreamWaitEvent after the last launch); 180 - 175.
  EXPECT_EQ(a.t3_us, (Samples{10, 5}));
  // T5 between launches: 114 - 110; 172 - 168.
  EXPECT_EQ(a.t5_us, (Samples{4, 4}));

  const OpSamples& b = samples.per_op.at("B");
  EXPECT_EQ(b.t1_us, (Samples{8}));  // 140 - 130 - 2
  EXPECT_TRUE(b.t2_us.empty());
  EXPECT_TRUE(b.t3_us.empty());
  EXPECT_EQ(b.t5_us, (Samples{8}));  // no launch: 10 us of CPU - 2 (its child)
  EXPECT_EQ(samples.per_op.at("D").t5_us, (Samples{5}));
  EXPECT_EQ(samples.per_op.at("D").t1_us, (Samples{118}));  // 300 - 180 - 2

  // T4 = call duration - 2, launches only.
  EXPECT_EQ(samples.t4_per_runtime_us.at("cudaLaunchKernel"), (Samples{3, 2, 2}));
  EXPECT_EQ(samples.t4_per_runtime_us.at("cudaMemcpyAsync"), (Samples{1}));
  EXPECT_EQ(samples.t4_per_runtime_us.count("cudaStreamWaitEvent"), 0u);
}

// Blocking waits are modelled by the engine (HostSync, pageable copies), so they are not
// overhead: F [400,500] launches [405,410], then cudaStreamSynchronize [412,492]; G [600,700]
// launches a copy to pageable memory [610,690] whose call lasts until the copy is done.
TEST(OverheadSamples, BlockingWaitsAreNotOverhead) {
  TraceBuilder b;
  std::int64_t f = b.op("F", 400, 100);
  b.call(f, "cudaLaunchKernel", 405, 5);
  b.call(f, "cudaStreamSynchronize", 412, 80, false);
  std::int64_t g = b.op("G", 600, 100);
  b.call(g, "cudaMemcpyAsync", 610, 80);
  b.trace().ops[static_cast<std::size_t>(g)].kernels.back().name =
      "Memcpy DtoH (Device -> Pageable)";
  LaunchParameters no_profiler;
  no_profiler.profiler_cpu_overhead_us = 0;
  OverheadSamples samples = collect_overhead_samples(b.trace(), no_profiler);
  EXPECT_EQ(samples.per_op.at("F").t3_us, (Samples{10}));  // 500 - 410 - 80 blocked
  EXPECT_EQ(samples.per_op.at("G").t2_us, (Samples{10}));
  EXPECT_EQ(samples.t4_per_runtime_us.count("cudaMemcpyAsync"), 0u);  // the wait is no T4
  EXPECT_EQ(samples.t4_per_runtime_us.at("cudaLaunchKernel"), (Samples{5}));
}

TEST(OverheadSamples, ProfilerOverheadIsAParameterAndSamplesClampAtZero) {
  LaunchParameters no_profiler;
  no_profiler.profiler_cpu_overhead_us = 0;
  OverheadSamples raw = collect_overhead_samples(known_gaps_trace(), no_profiler);
  EXPECT_EQ(raw.per_op.at("A").t1_us, (Samples{10}));
  EXPECT_EQ(raw.per_op.at("B").t5_us, (Samples{10}));
  LaunchParameters heavy;
  heavy.profiler_cpu_overhead_us = 50;
  OverheadSamples clamped = collect_overhead_samples(known_gaps_trace(), heavy);
  EXPECT_EQ(clamped.per_op.at("A").t1_us, (Samples{0}));
  EXPECT_EQ(clamped.t4_per_runtime_us.at("cudaLaunchKernel"), (Samples{0, 0, 0}));
}

TEST(OverheadExtractor, StatsPerOpAndPooled) {
  HostOverheads overheads = extract_host_overheads(known_gaps_trace());
  const OpOverheads& a = overheads.per_op.at("A");
  EXPECT_DOUBLE_EQ(a.t2.mean_us, 3.5);
  EXPECT_DOUBLE_EQ(a.t2.stddev_us, 1.5);  // population deviation
  EXPECT_EQ(a.t2.count, 2);
  EXPECT_DOUBLE_EQ(overheads.all_ops.t1.mean_us, 44.0);  // {6, 8, 118}: 118 is no outlier
                                                         // among three samples
  EXPECT_EQ(overheads.all_ops.t5.count, 4);              // {4, 4, 8, 5}
  EXPECT_DOUBLE_EQ(overheads.all_ops.t5.mean_us, 5.25);
  EXPECT_DOUBLE_EQ(overheads.t4_per_runtime.at("cudaLaunchKernel").mean_us, 7.0 / 3.0);
  EXPECT_DOUBLE_EQ(overheads.t4_all.mean_us, 2.0);  // {3, 2, 2, 1}
  EXPECT_EQ(overheads.source_traces, 1);
  // Unknown names fall back to the pooled statistics.
  EXPECT_DOUBLE_EQ(overheads.t1_us("aten::never_seen"), 44.0);
  EXPECT_DOUBLE_EQ(overheads.t4_us("cudaNeverCalled"), 2.0);
  // ... and so does a known op without samples of that type (D launches nothing: no T2).
  EXPECT_DOUBLE_EQ(overheads.t1_us("D"), 118.0);
  EXPECT_DOUBLE_EQ(overheads.t2_us("D"), overheads.all_ops.t2.mean_us);
  EXPECT_DOUBLE_EQ(overheads.t5_us("D"), 5.0);
}

TEST(OutlierRemoval, DropsSamplesOutsideTheWhiskers) {
  // seed 000 Sec. 4.4.2: "We remove per-type outliers outside whiskers (Q1 - 1.5IQR,
  // Q3 + 1.5IQR)". {1..8, 100}: Q1 = 3, Q3 = 7, IQR = 4, whiskers [-3, 13].
  Samples high{1, 2, 3, 4, 5, 6, 7, 8, 100};
  EXPECT_EQ(remove_outliers_iqr(high), (Samples{1, 2, 3, 4, 5, 6, 7, 8}));
  // {-20, 10..14}: Q1 = 10.25, Q3 = 12.75 (linear interpolation), whiskers [6.5, 16.5].
  Samples low{12, -20, 10, 14, 11, 13};
  EXPECT_EQ(remove_outliers_iqr(low), (Samples{12, 10, 14, 11, 13}));
  // {0, 0, 0, 1}: Q1 = 0, Q3 = 0.25, IQR 0.25, upper whisker 0.625: 1 is an outlier.
  EXPECT_EQ(remove_outliers_iqr(Samples{0, 1, 0, 0}), (Samples{0, 0, 0}));
  EXPECT_EQ(remove_outliers_iqr(Samples{5}), (Samples{5}));
  EXPECT_TRUE(remove_outliers_iqr(Samples{}).empty());
}

TEST(OutlierRemoval, AppliesPerOpAndType) {
  OverheadSamples samples;
  samples.per_op["x"].t1_us = {1, 2, 3, 4, 5, 6, 7, 8, 100};
  samples.per_op["y"].t1_us = {100, 101};
  HostOverheads overheads = summarize_overheads(samples, LaunchParameters{});
  EXPECT_EQ(overheads.per_op.at("x").t1.count, 8);
  EXPECT_DOUBLE_EQ(overheads.per_op.at("x").t1.mean_us, 4.5);
  EXPECT_EQ(overheads.per_op.at("y").t1.count, 2);
  // Pooled {1..8, 100, 100, 101}: Q1 = 3.5, Q3 = 54, whiskers [-72.25, 129.75]: all kept.
  EXPECT_EQ(overheads.all_ops.t1.count, 11);
}

TEST(MergeOverheads, PooledStatisticsEqualThoseOfTheUnion) {
  Samples first{1, 2, 3};
  Samples second{10, 20};
  Samples both{1, 2, 3, 10, 20};
  OverheadStats pooled = pool_stats(stats_of(first), stats_of(second));
  OverheadStats direct = stats_of(both);
  EXPECT_EQ(pooled.count, 5);
  EXPECT_DOUBLE_EQ(pooled.mean_us, direct.mean_us);
  EXPECT_NEAR(pooled.stddev_us, direct.stddev_us, 1e-12);
}

// Two traces whose ops put every sample inside the whiskers: merging their sets equals
// extracting from one trace holding both, for T2..T5 and T4. (T1 is not compared: in one
// trace the two op sequences overlap in time and share the one CPU clock, so their T1 gaps
// differ by construction; T1 pooling is covered by PooledStatisticsEqualThoseOfTheUnion.)
TEST(MergeOverheads, MergeOfTwoTracesEqualsExtractionOnTheirUnion) {
  auto add_ops = [](TraceBuilder& b, std::int64_t thread, double offset, double spread) {
    for (int i = 0; i < 6; ++i) {
      double start = offset + 100.0 * i;
      std::int64_t op = b.op(i % 2 ? "aten::mm" : "aten::relu", start, 20 + spread * i, thread);
      b.call(op, "cudaLaunchKernel", start + 4 + spread * (i % 3), 5 + spread * (i % 2));
      b.call(op, "cudaLaunchKernel", start + 12 + spread * (i % 3), 5);
    }
  };
  TraceBuilder first;
  add_ops(first, 1, 0, 0.5);
  TraceBuilder second;
  add_ops(second, 1, 0, 0.7);
  TraceBuilder union_trace;
  add_ops(union_trace, 1, 0, 0.5);
  add_ops(union_trace, 2, 0, 0.7);

  std::vector<HostOverheads> sets{extract_host_overheads(first.trace()),
                                  extract_host_overheads(second.trace())};
  HostOverheads merged = merge_host_overheads(sets);
  HostOverheads expected = extract_host_overheads(union_trace.trace());

  EXPECT_EQ(merged.source_traces, 2);
  ASSERT_EQ(merged.per_op.size(), expected.per_op.size());
  auto expect_same = [](const OverheadStats& got, const OverheadStats& want, const char* what) {
    EXPECT_EQ(got.count, want.count) << what;
    EXPECT_NEAR(got.mean_us, want.mean_us, 1e-9) << what;
    EXPECT_NEAR(got.stddev_us, want.stddev_us, 1e-9) << what;
  };
  for (const auto& [name, want] : expected.per_op) {
    const OpOverheads& got = merged.per_op.at(name);
    expect_same(got.t2, want.t2, "t2");
    expect_same(got.t3, want.t3, "t3");
    expect_same(got.t5, want.t5, "t5");
  }
  expect_same(merged.all_ops.t2, expected.all_ops.t2, "pooled t2");
  expect_same(merged.t4_all, expected.t4_all, "pooled t4");
  expect_same(merged.t4_per_runtime.at("cudaLaunchKernel"),
              expected.t4_per_runtime.at("cudaLaunchKernel"), "t4 cudaLaunchKernel");
  EXPECT_GT(merged.all_ops.t2.count, 0);
}

TEST(MergeOverheads, RefusesSetsWithDifferentLaunchParameters) {
  HostOverheads a;
  HostOverheads b;
  b.launch.profiler_cpu_overhead_us = 3;
  std::vector<HostOverheads> sets{a, b};
  EXPECT_THROW(merge_host_overheads(sets), RuntimeFailure);
  EXPECT_EQ(merge_host_overheads({}).source_traces, 0);
}

TEST(OverheadAsset, JsonRoundTripKeepsEveryFigure) {
  HostOverheads original = extract_host_overheads(known_gaps_trace());
  original.launch.kernel_gap_us = 1.25;
  const std::string path =
      (std::filesystem::temp_directory_path() / "perfsim_overheads_roundtrip.json").string();
  save_host_overheads(original, path);
  HostOverheads loaded = load_host_overheads(path);
  std::filesystem::remove(path);

  EXPECT_EQ(host_overheads_to_json(loaded), host_overheads_to_json(original));
  ASSERT_EQ(loaded.per_op.size(), original.per_op.size());
  EXPECT_EQ(loaded.per_op.at("A").t2.count, 2);
  EXPECT_DOUBLE_EQ(loaded.per_op.at("A").t2.stddev_us, 1.5);
  EXPECT_DOUBLE_EQ(loaded.t4_per_runtime.at("cudaLaunchKernel").mean_us, 7.0 / 3.0);
  EXPECT_DOUBLE_EQ(loaded.launch.kernel_gap_us, 1.25);
  EXPECT_EQ(loaded.source_traces, 1);
}

void expect_input_error(const std::string& json, const std::string& fragment) {
  try {
    host_overheads_from_json(json, "assets/overheads.json");
    FAIL() << "accepted: " << json;
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "assets/overheads.json");
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(OverheadAsset, BadJsonIsAnErrorNamingTheFile) {
  std::string good = host_overheads_to_json(extract_host_overheads(known_gaps_trace()));
  expect_input_error(good.substr(0, good.size() / 2), "invalid JSON");
  expect_input_error("[1, 2]", "a host-overhead asset is a JSON object");
  expect_input_error(R"({"something_else": {}})", "not a host-overhead asset");
  std::string wrong_format = good;
  wrong_format.replace(wrong_format.find("perfsim-host-overheads"), 22, "perfsim-kernel-models!");
  expect_input_error(wrong_format, "host_overheads.format");
  std::string negative = good;
  negative.replace(negative.find("\"count\": "), 9, "\"count\": -");
  expect_input_error(negative, "is outside [0, ");
}

}  // namespace
}  // namespace perfsim::overheads
