#pragma once
// An emulation of the PyTorch CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), enough
// to turn a sequence of tensor allocations and frees into "allocated" and "reserved" bytes as
// torch.cuda.max_memory_allocated / max_memory_reserved report them (seed 003 Sec. 3.1: the
// reserved figure is the one that decides out-of-memory, together with the context constant).
//
// Behaviour reproduced, as documented in the header comment and constants of
// CUDACachingAllocator.cpp and in the torch.cuda.memory_stats documentation:
// - Every request is rounded up to a multiple of 512 bytes (kMinBlockSize), at least 512.
// - Requests of at most 1 MiB (kSmallSize) are served from the small pool, whose segments
//   (one cudaMalloc each) are 2 MiB (kSmallBuffer); larger requests use the large pool, whose
//   segments are 20 MiB (kLargeBuffer) for requests under 10 MiB (kMinLargeAlloc) and the
//   request rounded up to 2 MiB (kRoundLarge) otherwise.
// - A request takes the smallest cached free block of its pool that is large enough (best fit,
//   lowest address on ties); only when none fits is a new segment reserved.
// - A block larger than the request is split when the remainder is at least 512 bytes (small
//   pool) or more than 1 MiB (large pool); otherwise the whole block is handed out.
// - A freed block stays reserved (cached) and merges with free neighbours of its segment.
// - When a new segment would exceed the device capacity, segments that are entirely free are
//   released (cudaFree) and the reservation retried; if it still does not fit the request
//   fails (the emulator reports it, it does not throw).
// Not reproduced: streams (one stream is assumed), max_split_size_mb, expandable segments,
// garbage-collection thresholds, per-process memory fractions.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "perfsim/units.hpp"

namespace perfsim::memory {

inline constexpr Bytes kMiB = 1024 * 1024;
inline constexpr Bytes kMinBlockBytes = 512;
inline constexpr Bytes kSmallRequestMaxBytes = 1 * kMiB;
inline constexpr Bytes kSmallSegmentBytes = 2 * kMiB;
inline constexpr Bytes kLargeSegmentBytes = 20 * kMiB;
inline constexpr Bytes kLargeRequestOwnSegmentBytes = 10 * kMiB;
inline constexpr Bytes kLargeSegmentRoundingBytes = 2 * kMiB;

// The block size a request of `requested_bytes` occupies (512-byte rounding).
Bytes rounded_block_bytes(Bytes requested_bytes);
// The segment the allocator reserves when no cached block fits a block of `block_bytes`.
Bytes segment_bytes_for(Bytes block_bytes);

enum class AllocatorPool : std::uint8_t { kSmall, kLarge };

class CachingAllocatorEmulator {
 public:
  using BlockId = std::int64_t;

  // Without a capacity, segments are never released (reservation only grows).
  explicit CachingAllocatorEmulator(std::optional<Bytes> capacity_bytes = std::nullopt);

  // nullopt when the device cannot hold the request even after releasing cached segments.
  // A request of 0 bytes occupies nothing and returns a valid id that free() accepts.
  std::optional<BlockId> allocate(Bytes requested_bytes);
  // Throws RuntimeFailure for an unknown or already freed id.
  void free(BlockId block);

  Bytes allocated_bytes() const { return allocated_bytes_; }  // sum of handed-out block sizes
  Bytes requested_bytes() const { return requested_bytes_; }  // sum of requests
  Bytes reserved_bytes() const { return reserved_bytes_; }    // sum of segments
  Bytes peak_allocated_bytes() const { return peak_allocated_bytes_; }
  Bytes peak_reserved_bytes() const { return peak_reserved_bytes_; }
  std::size_t segment_count() const { return segment_count_; }
  std::size_t failed_allocations() const { return failed_allocations_; }
  // Cached but unused bytes inside reserved segments (reserved - allocated).
  Bytes cached_free_bytes() const { return reserved_bytes_ - allocated_bytes_; }

 private:
  struct Block {
    Bytes offset_bytes = 0;
    Bytes size_bytes = 0;
    bool in_use = false;
  };
  struct Segment {
    AllocatorPool pool = AllocatorPool::kSmall;
    Bytes size_bytes = 0;
    std::map<Bytes, Block> blocks_by_offset;  // tiles the segment
    bool released = false;
  };
  // (size, segment, offset): ordering gives best fit, then the lowest address.
  using FreeKey = std::tuple<Bytes, std::size_t, Bytes>;
  struct Handle {
    std::size_t segment = 0;
    Bytes offset_bytes = 0;
    Bytes requested_bytes = 0;
  };

  std::set<FreeKey>& free_blocks(AllocatorPool pool);
  std::optional<FreeKey> best_fit(AllocatorPool pool, Bytes block_bytes);
  bool reserve_segment(AllocatorPool pool, Bytes block_bytes);
  void release_free_segments();
  Block& take_block(const FreeKey& key, Bytes block_bytes);

  std::optional<Bytes> capacity_bytes_;
  std::vector<Segment> segments_;
  std::set<FreeKey> small_free_;
  std::set<FreeKey> large_free_;
  std::unordered_map<BlockId, Handle> handles_;
  BlockId next_id_ = 1;
  Bytes allocated_bytes_ = 0;
  Bytes requested_bytes_ = 0;
  Bytes reserved_bytes_ = 0;
  Bytes peak_allocated_bytes_ = 0;
  Bytes peak_reserved_bytes_ = 0;
  std::size_t segment_count_ = 0;
  std::size_t failed_allocations_ = 0;
};

}  // namespace perfsim::memory
