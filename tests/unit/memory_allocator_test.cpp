// The caching-allocator emulation on hand-built allocation sequences. Expected figures follow
// from the rules of PyTorch's c10/cuda/CUDACachingAllocator.cpp as caching_allocator.hpp lists
// them (512-byte rounding; 1 MiB small-request limit; 2 MiB small segments; 20 MiB large
// segments below 10 MiB, else rounded to 2 MiB; best fit; split thresholds; merge on free).
#include <gtest/gtest.h>

#include "memory/caching_allocator.hpp"
#include "perfsim/error.hpp"

namespace perfsim::memory {
namespace {

constexpr Bytes MiB = 1024 * 1024;

TEST(CachingAllocator, RoundsRequestsTo512Bytes) {
  EXPECT_EQ(rounded_block_bytes(1), 512);
  EXPECT_EQ(rounded_block_bytes(512), 512);
  EXPECT_EQ(rounded_block_bytes(513), 1024);
  CachingAllocatorEmulator allocator;
  ASSERT_TRUE(allocator.allocate(1));
  ASSERT_TRUE(allocator.allocate(513));
  EXPECT_EQ(allocator.requested_bytes(), 514);
  EXPECT_EQ(allocator.allocated_bytes(), 512 + 1024);
  // Both come out of one 2 MiB small-pool segment.
  EXPECT_EQ(allocator.reserved_bytes(), 2 * MiB);
  EXPECT_EQ(allocator.segment_count(), 1u);
}

TEST(CachingAllocator, SegmentSizesPerPool) {
  EXPECT_EQ(segment_bytes_for(1 * MiB), 2 * MiB);          // small pool
  EXPECT_EQ(segment_bytes_for(1 * MiB + 512), 20 * MiB);   // large, under 10 MiB
  EXPECT_EQ(segment_bytes_for(10 * MiB - 512), 20 * MiB);  // still under 10 MiB
  EXPECT_EQ(segment_bytes_for(10 * MiB), 10 * MiB);        // own segment, 2 MiB multiple
  EXPECT_EQ(segment_bytes_for(11 * MiB + 512), 12 * MiB);  // rounded up to 2 MiB

  CachingAllocatorEmulator allocator;
  ASSERT_TRUE(allocator.allocate(1 * MiB));  // small: 2 MiB segment
  // Own 12 MiB segment; the rest (1 MiB - 512 B) is not split off, the segment is full.
  ASSERT_TRUE(allocator.allocate(11 * MiB + 1));
  EXPECT_EQ(allocator.allocated_bytes(), 1 * MiB + 12 * MiB);
  ASSERT_TRUE(allocator.allocate(1 * MiB + 1));  // large: a new 20 MiB segment
  EXPECT_EQ(allocator.reserved_bytes(), 2 * MiB + 12 * MiB + 20 * MiB);
  EXPECT_EQ(allocator.segment_count(), 3u);
  // A large request fits the rest of the 20 MiB segment: no new segment.
  ASSERT_TRUE(allocator.allocate(11 * MiB));
  EXPECT_EQ(allocator.segment_count(), 3u);
}

TEST(CachingAllocator, SplitsLargeSegmentsAndReusesFreedBlocks) {
  CachingAllocatorEmulator allocator;
  auto a = allocator.allocate(4 * MiB);
  auto b = allocator.allocate(6 * MiB);  // the 16 MiB remainder of the first segment
  ASSERT_TRUE(a && b);
  EXPECT_EQ(allocator.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(allocator.allocated_bytes(), 10 * MiB);
  allocator.free(*a);
  allocator.free(*b);
  EXPECT_EQ(allocator.allocated_bytes(), 0);
  EXPECT_EQ(allocator.reserved_bytes(), 20 * MiB);  // cached, not returned
  ASSERT_TRUE(allocator.allocate(8 * MiB));         // served from the cache
  EXPECT_EQ(allocator.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(allocator.segment_count(), 1u);
  EXPECT_EQ(allocator.peak_allocated_bytes(), 10 * MiB);
}

TEST(CachingAllocator, DoesNotSplitSmallRemaindersOfLargeBlocks) {
  CachingAllocatorEmulator allocator;
  // 19.5 MiB gets its own 20 MiB segment; the 0.5 MiB rest is not more than 1 MiB, so the
  // whole segment is handed out and counted as allocated.
  ASSERT_TRUE(allocator.allocate(19 * MiB + MiB / 2));
  EXPECT_EQ(allocator.allocated_bytes(), 20 * MiB);
  EXPECT_EQ(allocator.reserved_bytes(), 20 * MiB);
}

TEST(CachingAllocator, PicksTheSmallestFittingBlock) {
  CachingAllocatorEmulator allocator;
  auto a = allocator.allocate(6 * MiB);
  auto b = allocator.allocate(2 * MiB);
  auto c = allocator.allocate(3 * MiB);
  auto d = allocator.allocate(9 * MiB);  // fills the 20 MiB segment exactly
  ASSERT_TRUE(a && b && c && d);
  EXPECT_EQ(allocator.segment_count(), 1u);
  allocator.free(*a);  // 6 MiB hole at offset 0
  allocator.free(*c);  // 3 MiB hole at offset 8 MiB
  EXPECT_EQ(allocator.allocated_bytes(), 11 * MiB);
  // Best fit takes the 3 MiB hole; its 1 MiB rest is not split off (large pool needs > 1 MiB).
  ASSERT_TRUE(allocator.allocate(2 * MiB));
  EXPECT_EQ(allocator.allocated_bytes(), 14 * MiB);
  // The 6 MiB hole is still whole, so 5 MiB needs no new segment.
  ASSERT_TRUE(allocator.allocate(5 * MiB));
  EXPECT_EQ(allocator.allocated_bytes(), 20 * MiB);
  EXPECT_EQ(allocator.reserved_bytes(), 20 * MiB);
}

TEST(CachingAllocator, FragmentationForcesANewSegmentUntilNeighboursMerge) {
  CachingAllocatorEmulator allocator;
  auto a = allocator.allocate(8 * MiB);
  auto b = allocator.allocate(8 * MiB);
  ASSERT_TRUE(a && b);
  allocator.free(*a);
  // Free: 8 MiB at offset 0 and 4 MiB at offset 16 MiB, 12 MiB in all, but not contiguous:
  // a 10 MiB request needs its own 10 MiB segment.
  auto c = allocator.allocate(10 * MiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(allocator.reserved_bytes(), 30 * MiB);
  EXPECT_EQ(allocator.allocated_bytes(), 18 * MiB);
  EXPECT_EQ(allocator.cached_free_bytes(), 12 * MiB);
  // Freeing b merges the three pieces of the first segment into one 20 MiB block.
  allocator.free(*b);
  ASSERT_TRUE(allocator.allocate(18 * MiB));
  EXPECT_EQ(allocator.reserved_bytes(), 30 * MiB);
  EXPECT_EQ(allocator.segment_count(), 2u);
}

TEST(CachingAllocator, ReleasesCachedSegmentsWhenTheDeviceIsFull) {
  CachingAllocatorEmulator allocator(21 * MiB);
  auto small = allocator.allocate(1024);
  ASSERT_TRUE(small);
  allocator.free(*small);
  EXPECT_EQ(allocator.reserved_bytes(), 2 * MiB);
  // 20 MiB + the cached 2 MiB exceed 21 MiB: the free small segment is released first.
  ASSERT_TRUE(allocator.allocate(20 * MiB));
  EXPECT_EQ(allocator.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(allocator.peak_reserved_bytes(), 20 * MiB);  // never 22 MiB at once
  // Nothing left to release: the next segment does not fit and the request fails quietly.
  EXPECT_FALSE(allocator.allocate(2 * MiB));
  EXPECT_EQ(allocator.failed_allocations(), 1u);
}

TEST(CachingAllocator, RejectsUnknownFrees) {
  CachingAllocatorEmulator allocator;
  auto a = allocator.allocate(100);
  ASSERT_TRUE(a);
  allocator.free(*a);
  EXPECT_THROW(allocator.free(*a), RuntimeFailure);
  auto empty = allocator.allocate(0);
  ASSERT_TRUE(empty);
  EXPECT_EQ(allocator.reserved_bytes(), 2 * MiB);
  allocator.free(*empty);
}

}  // namespace
}  // namespace perfsim::memory
