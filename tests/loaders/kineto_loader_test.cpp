// The Kineto loader on the 8-rank DLRM fixture. Expected figures are those of
// ../shared/data/traces/README.md (param-dlrm-8xV100 table), so a reader can check them.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <string>

#include "trace_io/kineto_loader.hpp"

namespace perfsim::trace_io {
namespace {

const std::string kArchive =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-dlrm-8xV100/dlrm_kineto.tar.gz";

struct RankFacts {
  double step_ts_us;
  double step_dur_us;
  int kernels;  // cat == "kernel"
  double kernel_span_us;
  double sendrecv_sum_us;
  double allreduce_sum_us;
};

// traces/README.md, "Measured step time per rank".
constexpr std::array<RankFacts, 8> kReadme{{
    {1694128201426674, 14455, 245, 12542, 3999, 1799},
    {1694128201421205, 19901, 310, 18749, 9506, 1830},
    {1694128201428092, 13017, 246, 10887, 1807, 1685},
    {1694128201421900, 19313, 315, 18853, 8002, 1772},
    {1694128201424049, 17979, 251, 16139, 6353, 234},
    {1694128201424195, 17797, 245, 15929, 6056, 195},
    {1694128201428080, 13091, 246, 10941, 1823, 1735},
    {1694128201428718, 12509, 246, 10502, 389, 1357},
}};

const std::vector<Trace>& fixture() {
  static const std::vector<Trace> traces = [] {
    if (!std::filesystem::exists(kArchive)) {
      ADD_FAILURE() << "fixture missing: " << kArchive;
      return std::vector<Trace>{};
    }
    return load_kineto_archive(kArchive);
  }();
  return traces;
}

// Every GPU activity of a trace, attributed or not.
std::vector<const Kernel*> all_activities(const Trace& trace) {
  std::vector<const Kernel*> activities;
  for (const Op& op : trace.ops)
    for (const Kernel& kernel : op.kernels)
      activities.push_back(&kernel);
  for (const Kernel& kernel : trace.unattributed_kernels)
    activities.push_back(&kernel);
  return activities;
}

bool is_copy_or_set(const Kernel& kernel) {
  return kernel.name.rfind("Memcpy ", 0) == 0 || kernel.name.rfind("Memset ", 0) == 0;
}

TEST(KinetoLoader, LoadsEightRanksInRankOrder) {
  const auto& traces = fixture();
  ASSERT_EQ(traces.size(), 8u);
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(traces[rank].rank, rank);
    EXPECT_EQ(traces[rank].world_size, 8);
    EXPECT_EQ(traces[rank].format, "kineto");
    EXPECT_EQ(traces[rank].device_name, "Tesla V100-SXM2-32GB");
    EXPECT_NE(traces[rank].source.find("worker" + std::to_string(rank) + "_step_12"),
              std::string::npos);
  }
}

TEST(KinetoLoader, ProfilerStepWindowPerRank) {
  const auto& traces = fixture();
  ASSERT_EQ(traces.size(), 8u);
  for (int rank = 0; rank < 8; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_TRUE(traces[rank].measured_step.has_value());
    EXPECT_EQ(traces[rank].measured_step->name, "ProfilerStep#10");
    EXPECT_EQ(traces[rank].measured_step->start_us, kReadme[rank].step_ts_us);
    EXPECT_EQ(traces[rank].measured_step->duration_us, kReadme[rank].step_dur_us);
  }
}

TEST(KinetoLoader, KernelCountsAndSpanPerRank) {
  const auto& traces = fixture();
  ASSERT_EQ(traces.size(), 8u);
  for (int rank = 0; rank < 8; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    int kernels = 0;
    int copies = 0;
    int memsets = 0;
    double first = std::numeric_limits<double>::max();
    double last = 0;
    for (const Kernel* kernel : all_activities(traces[rank])) {
      ASSERT_TRUE(kernel->measured_start_us && kernel->measured_duration_us);
      if (kernel->name.rfind("Memcpy ", 0) == 0) {
        ++copies;
      } else if (kernel->name.rfind("Memset ", 0) == 0) {
        ++memsets;
      } else {
        ++kernels;
        first = std::min(first, *kernel->measured_start_us);
        last = std::max(last, *kernel->measured_start_us + *kernel->measured_duration_us);
      }
      if (is_copy_or_set(*kernel)) {
        EXPECT_EQ(kernel->category, KernelCategory::kMemory);
      }
    }
    EXPECT_EQ(kernels, kReadme[rank].kernels);
    EXPECT_EQ(copies, 16);  // gpu_memcpy events per rank
    EXPECT_EQ(memsets, (rank == 3 || rank == 4) ? 6 : 0);
    EXPECT_EQ(last - first, kReadme[rank].kernel_span_us);
  }
}

TEST(KinetoLoader, SummedKernelTimePerRank) {
  // Not in the README table; computed from the files with
  //   jq '[.traceEvents[] | select(.cat == "kernel") | .dur] | add' worker<r>_*.json
  // and, adding gpu_memcpy / gpu_memset, the GPU activity sums. The engine's measured-duration
  // active time is checked against these.
  constexpr std::array<double, 8> kKernelUs{6832, 12582, 4560, 11014, 7713, 7292, 4609, 2805};
  constexpr std::array<double, 8> kActivityUs{6851, 12601, 4579, 11042, 7739, 7311, 4628, 2825};
  const auto& traces = fixture();
  ASSERT_EQ(traces.size(), 8u);
  for (int rank = 0; rank < 8; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    double kernel_us = 0;
    double activity_us = 0;
    for (const Kernel* kernel : all_activities(traces[rank])) {
      activity_us += *kernel->measured_duration_us;
      if (!is_copy_or_set(*kernel))
        kernel_us += *kernel->measured_duration_us;
    }
    EXPECT_EQ(kernel_us, kKernelUs[rank]);
    EXPECT_EQ(activity_us, kActivityUs[rank]);
  }
}

TEST(KinetoLoader, UnattributedKernelsOnlyWhereLaunchesPrecedeTheProfiler) {
  // Ranks 1 and 3 hold 64 optimizer kernels whose cudaLaunchKernel was recorded before the
  // profiler window (correlation ids below every runtime call's); the others have none.
  const auto& traces = fixture();
  ASSERT_EQ(traces.size(), 8u);
  for (int rank = 0; rank < 8; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(traces[rank].unattributed_kernels.size(), (rank == 1 || rank == 3) ? 64u : 0u);
  }
}

TEST(KinetoLoader, NcclKernelsPerRankMatchReadmeSums) {
  const auto& traces = fixture();
  ASSERT_EQ(traces.size(), 8u);
  for (int rank = 0; rank < 8; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    int sendrecv = 0;
    int allreduce = 0;
    double sendrecv_us = 0;
    double allreduce_us = 0;
    for (const Kernel* kernel : all_activities(traces[rank])) {
      if (kernel->name.rfind("ncclKernel_SendRecv", 0) == 0) {
        ++sendrecv;
        sendrecv_us += *kernel->measured_duration_us;
        EXPECT_EQ(kernel->category, KernelCategory::kCommunication);
      } else if (kernel->name.rfind("ncclKernel_AllReduce", 0) == 0) {
        ++allreduce;
        allreduce_us += *kernel->measured_duration_us;
        EXPECT_EQ(kernel->category, KernelCategory::kCommunication);
      }
    }
    EXPECT_EQ(sendrecv, 5);
    EXPECT_EQ(allreduce, 3);
    EXPECT_EQ(sendrecv_us, kReadme[rank].sendrecv_sum_us);
    EXPECT_EQ(allreduce_us, kReadme[rank].allreduce_sum_us);
  }
}

TEST(KinetoLoader, OneCommInfoPerCollectiveOnTheC10dOp) {
  const auto& traces = fixture();
  ASSERT_EQ(traces.size(), 8u);
  for (int rank = 0; rank < 8; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const Trace& trace = traces[rank];
    int all_to_all = 0;
    int all_reduce = 0;
    for (const Op& op : trace.ops) {
      if (!op.comm)
        continue;
      EXPECT_EQ(op.name.rfind("c10d::", 0), 0u) << op.name;
      EXPECT_FALSE(op.is_annotation);
      EXPECT_EQ(op.comm->group_size, 8);
      EXPECT_EQ(op.comm->process_group, "");
      EXPECT_GT(op.comm->bytes_in, 0);
      CollectiveKind kind = op.comm->kind;
      all_to_all += kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kAllToAllv;
      all_reduce += kind == CollectiveKind::kAllReduce;
    }
    EXPECT_EQ(all_to_all, 5);
    EXPECT_EQ(all_reduce, 3);
  }
}

TEST(KinetoLoader, Rank0CollectiveSizesFromInputDims) {
  // traces/README.md: all_reduce of [394241], [112], [226960] floats on rank 0. The all-to-all
  // element counts are those of the nccl:all_to_all annotations (6144 float x2, 24 long,
  // 384 int, 3392 int); the last one receives 768 elements, so it is an all-to-allv.
  const auto& traces = fixture();
  ASSERT_EQ(traces.size(), 8u);
  std::vector<Bytes> all_reduce_bytes;
  std::vector<std::pair<Bytes, Bytes>> all_to_all_bytes;
  std::vector<CollectiveKind> all_to_all_kinds;
  for (const Op& op : traces[0].ops) {
    if (!op.comm)
      continue;
    if (op.comm->kind == CollectiveKind::kAllReduce) {
      EXPECT_EQ(op.comm->dtype, DType::kFloat32);
      EXPECT_EQ(op.comm->bytes_out, op.comm->bytes_in);
      all_reduce_bytes.push_back(op.comm->bytes_in);
    } else {
      all_to_all_bytes.emplace_back(op.comm->bytes_in, op.comm->bytes_out);
      all_to_all_kinds.push_back(op.comm->kind);
    }
  }
  EXPECT_EQ(all_reduce_bytes, (std::vector<Bytes>{394241 * 4, 112 * 4, 226960 * 4}));
  // Start-time order mixes the main thread (forward) and the backward thread.
  std::sort(all_to_all_bytes.begin(), all_to_all_bytes.end());
  EXPECT_EQ(all_to_all_bytes, (std::vector<std::pair<Bytes, Bytes>>{
                                  {24 * 8, 24 * 8},
                                  {384 * 4, 384 * 4},
                                  {3392 * 4, 768 * 4},
                                  {6144 * 4, 6144 * 4},
                                  {6144 * 4, 6144 * 4},
                              }));
  EXPECT_EQ(
      std::count(all_to_all_kinds.begin(), all_to_all_kinds.end(), CollectiveKind::kAllToAllv), 1);
}

TEST(KinetoLoader, Rank0TreeShape) {
  const auto& traces = fixture();
  ASSERT_EQ(traces.size(), 8u);
  const Trace& trace = traces[0];
  // cpu_op 1633 + user_annotation 40 (traces/README.md, rank 0 event categories).
  EXPECT_EQ(trace.ops.size(), 1673u);
  std::size_t runtime_calls = 0;
  std::size_t launches = 0;
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    EXPECT_EQ(op.id, static_cast<std::int64_t>(i));
    if (i > 0) {
      EXPECT_LE(*trace.ops[i - 1].measured_start_us, *op.measured_start_us);
    }
    if (op.parent_id != kNoParent) {
      const Op& parent = *trace.find(op.parent_id);
      EXPECT_LT(parent.id, op.id);  // parents first
      EXPECT_EQ(parent.thread_id, op.thread_id);
      EXPECT_GE(*op.measured_start_us, *parent.measured_start_us);
      EXPECT_LE(*op.measured_start_us + *op.measured_duration_us,
                *parent.measured_start_us + *parent.measured_duration_us);
    }
    runtime_calls += op.runtime_calls.size();
    launches += op.kernels.size();
  }
  // 525 cuda_runtime events; 4 lie outside every op (3 cudaStreamWaitEvent and the final
  // cudaDeviceSynchronize). 245 kernels + 16 memcpy, all attributed.
  EXPECT_EQ(runtime_calls, 521u);
  EXPECT_EQ(launches, 261u);
  // Every kernel is reachable from a top-level op: the engine sees them all.
  std::size_t reachable = 0;
  for (std::size_t position : trace.top_level_positions())
    reachable += trace.kernels_under(position).size();
  EXPECT_EQ(reachable, 261u);
}

TEST(KinetoLoader, ReportCountsWhatWasNotUsed) {
  KinetoLoad load = load_kineto_trace_with_report(
      io::read_input(kArchive + ":dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json"));
  EXPECT_EQ(load.report.cpu_ops, 1633);
  EXPECT_EQ(load.report.annotations, 40);
  EXPECT_EQ(load.report.runtime_calls, 525);
  EXPECT_EQ(load.report.gpu_activities, 261);
  EXPECT_EQ(load.report.runtime_calls_outside_ops, 4);
  EXPECT_EQ(load.report.unattributed_gpu_activities, 0);
  EXPECT_EQ(load.report.profiler_steps, 1);
  EXPECT_EQ(load.report.collectives, 8);
  EXPECT_EQ(load.report.partial_overlaps, 0);
  EXPECT_EQ(load.report.ignored_events.at("ac2g"), 786);
}

}  // namespace
}  // namespace perfsim::trace_io
