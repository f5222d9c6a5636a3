// How NCCL executes a ring (collectives/ring_pipeline.hpp) and the NCCL_MIN_CTAS / NCCL_MAX_CTAS
// channel bounds (NcclSettings): loop counts, the latency a loop exposes, and the per-channel
// bandwidth caps, each worked by hand from NCCL's constants.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "collectives/nccl_fabric.hpp"
#include "collectives/nccl_tuning.hpp"
#include "collectives/ring_pipeline.hpp"
#include "perfsim/error.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {
namespace {

constexpr double kMiB = 1048576.0;
constexpr double kGiB = 1024.0 * kMiB;

TEST(RingPipeline, ChunksAreNcclsDefaults) {
  EXPECT_DOUBLE_EQ(ring_chunk_bytes(NcclProtocol::kSimple), 2.0 * kMiB);  // 4 x 512 KiB steps
  EXPECT_DOUBLE_EQ(ring_chunk_bytes(NcclProtocol::kLL), 32768.0);         // 64 KiB step, half data
  EXPECT_DOUBLE_EQ(ring_chunk_bytes(NcclProtocol::kLL128), 576000.0);     // 614400 x 120 / 128
  EXPECT_EQ(ring_slices_per_chunk(NcclProtocol::kSimple), 2);
  EXPECT_EQ(ring_slices_per_chunk(NcclProtocol::kLL), 4096);     // 8 data bytes per line
  EXPECT_EQ(ring_slices_per_chunk(NcclProtocol::kLL128), 4800);  // 120 data bytes per line
}

TEST(RingPipeline, LoopCount) {
  // 8 ranks x 2 channels x 2 MiB = 32 MiB per loop: 80 MiB is two full loops and a last loop of
  // 16 MiB, i.e. 1 MiB per rank and channel.
  const RingLoops loops = ring_loops(80.0 * kMiB, 8, 2, NcclProtocol::kSimple);
  EXPECT_EQ(loops.full_loops, 2);
  EXPECT_DOUBLE_EQ(loops.full_chunk_bytes, 2.0 * kMiB);
  EXPECT_DOUBLE_EQ(loops.last_chunk_bytes, 1.0 * kMiB);
  EXPECT_EQ(loops.loops(), 3);
  EXPECT_EQ(ring_loops(64.0 * kMiB, 8, 2, NcclProtocol::kSimple).loops(), 2);
  // 1024 ranks x 32 channels x 576000 B = 18.9 GB: every size of the 128-node LL128 sweep
  // (1-16 GiB) is a single loop.
  for (const double gib : {1.0, 16.0}) {
    const RingLoops big = ring_loops(gib * kGiB, 1024, 32, NcclProtocol::kLL128);
    EXPECT_EQ(big.full_loops, 0);
    EXPECT_EQ(big.loops(), 1);
  }
}

TEST(RingPipeline, OneSliceExposesTheHopLatencyOncePerLoop) {
  // 8 ranks, 2 channels, 576000 B chunks (LL128's), 9216000 B per loop; three loops, moved as
  // one slice per chunk (store and forward). All-reduce: 14 steps a loop, 2 us a hop, base 14
  // us, bus bandwidth 100 GB/s (algbw 100 x 8 / 14): every loop exposes its 14 hops.
  const double bytes = 3.0 * 9216000.0;
  const RingLoops loops = ring_loops(bytes, 8, 2, NcclProtocol::kLL128);
  ASSERT_EQ(loops.full_loops, 3);
  ASSERT_EQ(loops.loops(), 3);
  const double transfer_us = bytes / (1e3 * 100.0 * 8.0 / 14.0);
  EXPECT_NEAR(ring_execution_us(loops, 14, 2, 1, 14.0, 2.0, 100.0),
              14.0 + 3 * 14 * 2.0 + transfer_us, 1e-6);
}

TEST(RingPipeline, SlicesHideTheHopBehindLargeChunks) {
  // Simple, 8 ranks, 2 channels at 100 GB/s, 32 MiB loops: 256 MiB is 8 loops. The first costs
  // NCCL's 14 hops; in the 7 others a 2 MiB chunk step (2 x 2 MiB / 100 GB/s = 41.9 us) hides
  // the 2 us hop plus half of it (21.0 us): the hop latency is paid once, not 8 times.
  const double bytes = 256.0 * kMiB;
  const RingLoops loops = ring_loops(bytes, 8, 2, NcclProtocol::kSimple);
  ASSERT_EQ(loops.loops(), 8);
  const double transfer_us = bytes / (1e3 * 100.0 * 8.0 / 14.0);
  EXPECT_NEAR(ring_execution_us(loops, 14, 2, 2, 8.4, 2.0, 100.0), 8.4 + 14 * 2.0 + transfer_us,
              1e-6);
  // One loop is NCCL's cost exactly: base + steps x (hop + transfer).
  const RingLoops small = ring_loops(16 * 8192.0, 8, 2, NcclProtocol::kSimple);
  ASSERT_EQ(small.loops(), 1);
  const double step_us = 2.0 * 8192.0 / (1e3 * 100.0);
  EXPECT_NEAR(ring_execution_us(small, 14, 2, 2, 8.4, 2.0, 100.0), 8.4 + 14 * (2.0 + step_us),
              1e-9);
  // A full loop then a partial one of 4 KiB chunks (0.08 us steps): the last loop's steps are
  // hop-bound, 2 us + half a step each, and are exposed.
  const RingLoops tail = ring_loops(32.0 * kMiB + 16 * 4096.0, 8, 2, NcclProtocol::kSimple);
  ASSERT_EQ(tail.full_loops, 1);
  ASSERT_DOUBLE_EQ(tail.last_chunk_bytes, 4096.0);
  const double full_step_us = 2.0 * 2.0 * kMiB / (1e3 * 100.0);
  const double tail_step_us = 2.0 * 4096.0 / (1e3 * 100.0);
  EXPECT_NEAR(ring_execution_us(tail, 14, 2, 2, 8.4, 2.0, 100.0),
              8.4 + 14 * (2.0 + full_step_us) + 14 * (2.0 + tail_step_us / 2), 1e-9);
}

// HGX H100, 8 x 400G NICs, the model's default 4 channels for the caps below.
NcclFabric h100(int channels) {
  NcclFabric fabric;
  fabric.generation = GpuGeneration::kHopper;
  fabric.nvls = true;
  fabric.intra_busbw_GBps = 18 * 20.6;
  fabric.nvls_busbw_GBps = 2 * 0.85 * fabric.intra_busbw_GBps;
  fabric.net_busbw_GBps = 400.0;
  fabric.channels = channels;
  return fabric;
}

TEST(RingPipeline, NcclsCostChoosesTheExecutionPrices) {
  // Ring LL across 4 nodes (32 ranks) of a transport with 10x InfiniBand's network hop (27 us for
  // LL), 16 channels: 32 KiB chunks, 16 MiB loops; 64 MiB is 4 loops. LL's bus bandwidth is its
  // 20.4 GB/s multi-node cap, so a 32 KiB x 16 step takes 25.7 us, more than the average hop
  // ((56 x 1 + 6 x 27) / 62 = 3.5 us): the later loops hide their hops and the run takes NCCL's
  // cost. With 1 channel (NCCL_MAX_CTAS=1) a step takes 1.6 us, less than the hop: each of the
  // 63 later loops exposes its hops.
  const double bytes = 64.0 * kMiB;
  const auto ll = parse_nccl_settings("ring", "LL", "test", "");
  NcclFabric slow_net = h100(16);
  slow_net.net_latency_scale = 10.0;
  const auto sixteen = nccl_estimate(CollectiveKind::kAllReduce, bytes, {32, 4}, slow_net, ll);
  ASSERT_EQ(ring_loops(bytes, 32, 16, NcclProtocol::kLL).loops(), 4);
  EXPECT_NEAR(sixteen.time_us, sixteen.tuner_time_us, 1e-6);
  NcclSettings one = ll;
  one.max_ctas = 1;
  const auto single = nccl_estimate(CollectiveKind::kAllReduce, bytes, {32, 4}, slow_net, one);
  ASSERT_EQ(ring_loops(bytes, 32, 1, NcclProtocol::kLL).loops(), 64);
  const double hop_us = (56 * 1.0 + 6 * 27.0) / 62;
  const double step_us = 32768.0 / (1e3 * 20.4);
  EXPECT_NEAR(single.time_us - single.tuner_time_us, 63 * 62 * (hop_us + step_us / 4096 - step_us),
              1e-6);
}

TEST(RingPipeline, CtaBoundsSetTheChannelsAndTheirCaps) {
  // Ring LL128 is capped at channels x 36.7 GB/s on Hopper (NCCL's per-channel LL128 rate): 4
  // channels give 146.8 GB/s of bus bandwidth, under 0.92 x the ring's 370.8 GB/s (18 NVLinks x
  // 20.6 GB/s, below the NICs' 400).
  const auto ring_ll128 = parse_nccl_settings("ring", "LL128", "test", "");
  const auto busbw = [](const NcclEstimate& estimate) { return estimate.algbw_GBps * 126 / 64; };
  const double bytes = 1.0 * kGiB;
  EXPECT_NEAR(busbw(nccl_estimate(CollectiveKind::kAllReduce, bytes, {64, 8}, h100(4), ring_ll128)),
              4 * 36.7, 1e-9);
  NcclSettings more = ring_ll128;
  more.min_ctas = 8;  // NCCL_MIN_CTAS=8: 293.6 GB/s, still under 341.1
  EXPECT_EQ(more.channels(4), 8);
  EXPECT_NEAR(busbw(nccl_estimate(CollectiveKind::kAllReduce, bytes, {64, 8}, h100(4), more)),
              8 * 36.7, 1e-9);
  more.min_ctas = 24;  // 880.8 GB/s of channels: the ring's own rate binds
  EXPECT_NEAR(busbw(nccl_estimate(CollectiveKind::kAllReduce, bytes, {64, 8}, h100(4), more)),
              0.92 * 18 * 20.6, 1e-9);
  NcclSettings fewer = ring_ll128;
  fewer.max_ctas = 2;  // NCCL_MAX_CTAS=2 on a 16-channel fabric
  EXPECT_EQ(fewer.channels(16), 2);
  EXPECT_NEAR(busbw(nccl_estimate(CollectiveKind::kAllReduce, bytes, {64, 8}, h100(16), fewer)),
              2 * 36.7, 1e-9);
  EXPECT_EQ(NcclSettings{}.channels(16), 16);  // unset: the channels NCCL's search found
}

// hgx-h100.json with `nccl` (a JSON object) added.
topology::Topology hgx_h100_with(const std::string& nccl) {
  std::ifstream in(std::string(PERFSIM_SOURCE_DIR) + "/configs/topologies/hgx-h100.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.insert(text.find('{') + 1, "\"nccl\": " + nccl + ",");
  return topology::parse_topology(text, "hgx-h100-edited.json");
}

TEST(RingPipeline, TopologyCarriesTheCtaBounds) {
  const auto settings = topology_nccl_settings(hgx_h100_with(R"({"min_ctas": 24})"));
  EXPECT_EQ(settings.min_ctas, 24);
  EXPECT_EQ(settings.max_ctas, 0);
  EXPECT_EQ(settings.channels(16), 24);
  EXPECT_THROW(hgx_h100_with(R"({"min_ctas": 0})"), InputError);
  try {
    hgx_h100_with(R"({"min_ctas": 24, "max_ctas": 8})");
    FAIL() << "min_ctas above max_ctas was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("min_ctas"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace perfsim::collectives
