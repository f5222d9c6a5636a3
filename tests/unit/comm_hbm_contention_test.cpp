// HBM sharing between a communication kernel and the compute kernel beside it: the traffic a
// collective moves per bus byte, the roofline with the resources left, the generator's marks.
#include <gtest/gtest.h>

#include <filesystem>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_collective_bus_rates.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/comm_contention.hpp"
#include "kernels/comm_hbm_traffic.hpp"
#include "support/tiny_llm.hpp"
#include "topology/topology.hpp"

namespace perfsim {
namespace {

using generators::llm::ParallelConfig;
using kernels::CommDataPath;
using kernels::CommLoad;
using kernels::NcclProtocol;

devices::DeviceSpec small_gpu() {
  devices::DeviceSpec device;
  device.name = "test-gpu";
  device.sm_count.value = 100;
  device.hbm_bandwidth_GBps.value = 2000;
  device.min_kernel_duration_us.value = 1;
  device.tensor_core_tflops[DType::kBFloat16].value = 300;
  return device;
}

TEST(CommHbmTraffic, RingCollectivesMoveThreeHbmBytesPerBusByte) {
  // FIFO write + FIFO read + one pass over the rank's own data.
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllGather}) {
    EXPECT_DOUBLE_EQ(kernels::hbm_bytes_per_bus_byte(kind, CommDataPath::kNcclStaged), 3.0);
  }
  // LL doubles the FIFO traffic (8 bytes per 4 of data), LL128 adds 8 per 120.
  EXPECT_DOUBLE_EQ(kernels::hbm_bytes_per_bus_byte(CollectiveKind::kAllReduce,
                                                   CommDataPath::kNcclStaged, NcclProtocol::kLl),
                   5.0);
  EXPECT_DOUBLE_EQ(kernels::hbm_bytes_per_bus_byte(CollectiveKind::kAllReduce,
                                                   CommDataPath::kNcclStaged, NcclProtocol::kLl128),
                   1.0 + 2.0 * 128.0 / 120.0);
  // An exchange reads what it sends and writes what it receives, besides the FIFO.
  EXPECT_DOUBLE_EQ(
      kernels::hbm_bytes_per_bus_byte(CollectiveKind::kSend, CommDataPath::kNcclStaged), 4.0);
  EXPECT_DOUBLE_EQ(
      kernels::hbm_bytes_per_bus_byte(CollectiveKind::kAllToAll, CommDataPath::kNcclStaged), 4.0);
  // Peer-direct (userbuffers, copy engines): no FIFO.
  EXPECT_DOUBLE_EQ(
      kernels::hbm_bytes_per_bus_byte(CollectiveKind::kReduceScatter, CommDataPath::kPeerDirect),
      1.0);
  EXPECT_DOUBLE_EQ(
      kernels::hbm_bytes_per_bus_byte(CollectiveKind::kAllGather, CommDataPath::kPeerDirect), 2.0);
  EXPECT_DOUBLE_EQ(
      kernels::hbm_bytes_per_bus_byte(CollectiveKind::kSend, CommDataPath::kPeerDirect), 2.0);
  EXPECT_DOUBLE_EQ(
      kernels::hbm_bytes_per_bus_byte(CollectiveKind::kBarrier, CommDataPath::kNcclStaged), 0.0);
}

TEST(CommHbmContention, MemoryBoundKernelGetsTheHbmLeft) {
  const devices::DeviceSpec device = small_gpu();
  const kernels::KernelSpec add{"add", KernelCategory::kOther,
                                kernels::ElementwiseWork{1e6, 2e6, 2e6, DType::kBFloat16}};
  // 500 of 2000 GB/s taken: 7 us at 3/4 of the bandwidth; the SMs do not matter.
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(add, 7.0, CommLoad{0, 500}, device), 7.0 / 0.75);
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(add, 7.0, CommLoad{20, 500}, device), 7.0 / 0.75);
  // The collective asks for 1500: both saturate HBM, each keeps half.
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(add, 7.0, CommLoad{0, 1500}, device), 14.0);
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(add, 7.0, CommLoad{}, device), 7.0);
  const kernels::KernelSpec norm{"batch_norm", KernelCategory::kOther,
                                 kernels::MemoryBoundWork{4e6, 4e6, DType::kBFloat16}};
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(norm, 10.0, CommLoad{24, 1000}, device), 20.0);
}

TEST(CommHbmContention, LargeGemmSlowsOnlyByTheSms) {
  const devices::DeviceSpec device = small_gpu();
  // 256 x 128 tiles: 4000 tiles, 40 waves on 100 SMs, 50 on 80; 2 x 25600 x 5120 x 4096 flops
  // against 514 MB of operands: compute-bound even at a quarter of the HBM bandwidth.
  const kernels::GemmWork work{25600, 5120, 4096, 1, DType::kBFloat16};
  const kernels::KernelSpec gemm{"mm", KernelCategory::kGemm, work};
  const double alone = kernels::analytical_gemm_duration_us(work, device);
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(gemm, alone, CommLoad{0, 1000}, device), alone);
  EXPECT_NEAR(kernels::contended_duration_us(gemm, alone, CommLoad{20, 1000}, device) / alone,
              50.0 / 40.0, 1e-9);
}

TEST(CommHbmContention, MemoryBoundGemmSlowsByTheHbmShare) {
  devices::DeviceSpec device = small_gpu();
  device.hbm_bandwidth_GBps.value = 500;
  // k = 16: (8192 x 16 x 2 + 8192^2) x 2 bytes = 134.7 MB, 269 us at 500 GB/s; the math
  // takes far less, so the operands' stream sets the time.
  const kernels::GemmWork work{8192, 8192, 16, 1, DType::kBFloat16};
  ASSERT_TRUE(kernels::analytical_gemm_estimate(work, device).memory_bound);
  const double bytes = (8192.0 * 16 * 2 + 8192.0 * 8192) * 2;
  const double alone = kernels::analytical_gemm_duration_us(work, device);
  EXPECT_NEAR(alone, bytes / 500e3, 1e-6);
  const kernels::KernelSpec gemm{"mm", KernelCategory::kGemm, work};
  // 125 of 500 GB/s taken: 4/3 the time.
  EXPECT_NEAR(kernels::contended_duration_us(gemm, alone, CommLoad{0, 125}, device), bytes / 375e3,
              1e-6);
}

TEST(CommHbmContention, FlashAttentionStaysComputeBound) {
  const devices::DeviceSpec device = small_gpu();
  kernels::AttentionWork work;
  work.batch_heads = 32;
  work.q_len = 4096;
  work.kv_len = 4096;
  work.head_dim = 128;
  const kernels::KernelSpec attention{"flash", KernelCategory::kGemm, work};
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(attention, 8.0, CommLoad{0, 1000}, device), 8.0);
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(attention, 8.0, CommLoad{20, 1000}, device),
                   10.0);
}

topology::Topology hgx_h100_two_nodes() {
  const auto path =
      std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies/hgx-h100-2node.json";
  return topology::load_topology(path.string());
}

TEST(CollectiveBusRates, NvlinkInsideANodeNicsAcross) {
  const topology::Topology topology = hgx_h100_two_nodes();
  // NVLink4 450 GB/s and NDR 50 GB/s per GPU, each at 0.8 as bus bandwidth.
  const auto across =
      generators::llm::collective_bus_rates(ParallelConfig{.tp = 8, .pp = 1, .dp = 2}, topology);
  EXPECT_DOUBLE_EQ(across.tp_GBps, 360.0);
  EXPECT_DOUBLE_EQ(across.dp_GBps, 40.0);
  EXPECT_DOUBLE_EQ(across.cp_GBps, 0.0);
  const auto inside =
      generators::llm::collective_bus_rates(ParallelConfig{.tp = 4, .pp = 2, .dp = 2}, topology);
  EXPECT_DOUBLE_EQ(inside.dp_GBps, 360.0);
  // CP 2 inside a node; the DP x CP group (8 ranks, 4 per node) on 4 NICs per node.
  ParallelConfig context{.tp = 2, .pp = 1, .dp = 4};
  context.cp = 2;
  const auto ring = generators::llm::collective_bus_rates(context, topology);
  EXPECT_DOUBLE_EQ(ring.cp_GBps, 360.0);
  EXPECT_DOUBLE_EQ(ring.dp_GBps, 40.0);
}

double hbm_of(const Op& op) {
  return kernels::comm_load_of(op).hbm_GBps;
}

TEST(CommHbmMarks, OverlappedGradientReductionMarksTheBackwardOps) {
  ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 2};
  parallel.overlap_grad_reduce = true;
  parallel.bucket_bytes = 1;  // a bucket per layer: every later layer runs beside one
  parallel.comm_sms = 24;
  parallel.bus_rates.dp_GBps = 100;
  const Trace trace = generators::llm::generate_llm_rank(test_support::tiny_gpt(), parallel, 0);
  int marked = 0;
  for (const Op& op : trace.ops) {
    if (kernels::contention_sms_of(op) == 0) {
      EXPECT_EQ(hbm_of(op), 0.0) << op.name;
      continue;
    }
    ++marked;
    EXPECT_DOUBLE_EQ(hbm_of(op), 300.0) << op.name;  // all-reduce: 3 x 100 GB/s
  }
  EXPECT_GT(marked, 0);
  // Without bus rates: SM contention only, as before HBM was modelled.
  parallel.bus_rates = {};
  for (const Op& op : generators::llm::generate_llm_rank(test_support::tiny_gpt(), parallel, 0).ops)
    EXPECT_EQ(hbm_of(op), 0.0);
}

TEST(CommHbmMarks, UserbufferOverlapsMarkPeerDirectTraffic) {
  ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1};
  parallel.sequence_parallel = true;
  parallel.tp_comm_overlap = true;
  parallel.bus_rates.tp_GBps = 100;
  const Trace trace = generators::llm::generate_llm_rank(test_support::tiny_gpt(), parallel, 0);
  int ring_exchange = 0, pipelined = 0, bulk_gather = 0;
  for (const Op& op : trace.ops) {
    const int sms = kernels::contention_sms_of(op);
    const double hbm = hbm_of(op);
    if (sms == 0 && hbm > 0) {
      EXPECT_DOUBLE_EQ(hbm, 200.0) << op.name;  // copy-engine push: read + peer's write
      ++ring_exchange;
    } else if (sms > 0 && hbm == 100.0) {
      ++pipelined;  // reduce-scatter read by the peers (pipelined forward, bulk wgrad)
    } else if (sms > 0 && hbm == 200.0) {
      ++bulk_gather;  // bulk all-gather under the data gradient
    } else {
      EXPECT_EQ(sms, 0) << op.name;
      EXPECT_EQ(hbm, 0.0) << op.name;
    }
  }
  EXPECT_GT(ring_exchange, 0);
  EXPECT_GT(pipelined, 0);
  EXPECT_GT(bulk_gather, 0);
}

}  // namespace
}  // namespace perfsim
