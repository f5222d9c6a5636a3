#include "memory/caching_allocator.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "perfsim/error.hpp"

namespace perfsim::memory {
namespace {

constexpr std::size_t kNoSegment = std::numeric_limits<std::size_t>::max();

Bytes round_up(Bytes value, Bytes multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

AllocatorPool pool_for(Bytes block_bytes) {
  return block_bytes <= kSmallRequestMaxBytes ? AllocatorPool::kSmall : AllocatorPool::kLarge;
}

// CUDACachingAllocator's should_split: small blocks keep a remainder of one minimum block,
// large blocks only a remainder that is itself a large allocation.
bool should_split(AllocatorPool pool, Bytes remainder_bytes) {
  return pool == AllocatorPool::kSmall ? remainder_bytes >= kMinBlockBytes
                                       : remainder_bytes > kSmallRequestMaxBytes;
}

}  // namespace

Bytes rounded_block_bytes(Bytes requested_bytes) {
  if (requested_bytes < kMinBlockBytes)
    return kMinBlockBytes;
  return round_up(requested_bytes, kMinBlockBytes);
}

Bytes segment_bytes_for(Bytes block_bytes) {
  if (block_bytes <= kSmallRequestMaxBytes)
    return kSmallSegmentBytes;
  if (block_bytes < kLargeRequestOwnSegmentBytes)
    return kLargeSegmentBytes;
  return round_up(block_bytes, kLargeSegmentRoundingBytes);
}

CachingAllocatorEmulator::CachingAllocatorEmulator(std::optional<Bytes> capacity_bytes)
    : capacity_bytes_(capacity_bytes) {}

std::set<CachingAllocatorEmulator::FreeKey>& CachingAllocatorEmulator::free_blocks(
    AllocatorPool pool) {
  return pool == AllocatorPool::kSmall ? small_free_ : large_free_;
}

std::optional<CachingAllocatorEmulator::FreeKey> CachingAllocatorEmulator::best_fit(
    AllocatorPool pool, Bytes block_bytes) {
  auto& blocks = free_blocks(pool);
  auto it = blocks.lower_bound({block_bytes, 0, 0});
  if (it == blocks.end())
    return std::nullopt;
  return *it;
}

bool CachingAllocatorEmulator::reserve_segment(AllocatorPool pool, Bytes block_bytes) {
  const Bytes size = segment_bytes_for(block_bytes);
  if (capacity_bytes_ && reserved_bytes_ + size > *capacity_bytes_) {
    // As the allocator does after a failed cudaMalloc: give back every cached segment that
    // holds no live block, then try once more.
    release_free_segments();
    if (reserved_bytes_ + size > *capacity_bytes_)
      return false;
  }
  Segment segment;
  segment.pool = pool;
  segment.size_bytes = size;
  segment.blocks_by_offset.emplace(0, Block{0, size, false});
  segments_.push_back(std::move(segment));
  free_blocks(pool).insert({size, segments_.size() - 1, 0});
  reserved_bytes_ += size;
  ++segment_count_;
  peak_reserved_bytes_ = std::max(peak_reserved_bytes_, reserved_bytes_);
  return true;
}

void CachingAllocatorEmulator::release_free_segments() {
  for (std::size_t index = 0; index < segments_.size(); ++index) {
    Segment& segment = segments_[index];
    if (segment.released || segment.blocks_by_offset.size() != 1)
      continue;
    const Block& only = segment.blocks_by_offset.begin()->second;
    if (only.in_use)
      continue;
    free_blocks(segment.pool).erase({only.size_bytes, index, only.offset_bytes});
    segment.blocks_by_offset.clear();
    segment.released = true;
    reserved_bytes_ -= segment.size_bytes;
    --segment_count_;
  }
}

CachingAllocatorEmulator::Block& CachingAllocatorEmulator::take_block(const FreeKey& key,
                                                                      Bytes block_bytes) {
  const auto [size, segment_index, offset] = key;
  Segment& segment = segments_[segment_index];
  free_blocks(segment.pool).erase(key);
  Block& block = segment.blocks_by_offset.at(offset);
  const Bytes remainder = size - block_bytes;
  if (should_split(segment.pool, remainder)) {
    block.size_bytes = block_bytes;
    const Bytes rest_offset = offset + block_bytes;
    segment.blocks_by_offset.emplace(rest_offset, Block{rest_offset, remainder, false});
    free_blocks(segment.pool).insert({remainder, segment_index, rest_offset});
  }
  block.in_use = true;
  return block;
}

std::optional<CachingAllocatorEmulator::BlockId> CachingAllocatorEmulator::allocate(
    Bytes requested_bytes) {
  if (requested_bytes < 0)
    throw RuntimeFailure("caching allocator: negative request of " +
                         std::to_string(requested_bytes) + " bytes");
  if (requested_bytes == 0) {
    handles_.emplace(next_id_, Handle{kNoSegment, 0, 0});
    return next_id_++;
  }
  const Bytes block_bytes = rounded_block_bytes(requested_bytes);
  const AllocatorPool pool = pool_for(block_bytes);
  std::optional<FreeKey> key = best_fit(pool, block_bytes);
  if (!key) {
    if (!reserve_segment(pool, block_bytes)) {
      ++failed_allocations_;
      return std::nullopt;
    }
    key = best_fit(pool, block_bytes);
  }
  const std::size_t segment_index = std::get<1>(*key);
  Block& block = take_block(*key, block_bytes);
  allocated_bytes_ += block.size_bytes;
  requested_bytes_ += requested_bytes;
  peak_allocated_bytes_ = std::max(peak_allocated_bytes_, allocated_bytes_);
  handles_.emplace(next_id_, Handle{segment_index, block.offset_bytes, requested_bytes});
  return next_id_++;
}

void CachingAllocatorEmulator::free(BlockId id) {
  auto handle_it = handles_.find(id);
  if (handle_it == handles_.end())
    throw RuntimeFailure("caching allocator: free of unknown block " + std::to_string(id));
  const Handle handle = handle_it->second;
  handles_.erase(handle_it);
  if (handle.segment == kNoSegment)
    return;
  Segment& segment = segments_[handle.segment];
  auto block_it = segment.blocks_by_offset.find(handle.offset_bytes);
  allocated_bytes_ -= block_it->second.size_bytes;
  requested_bytes_ -= handle.requested_bytes;
  block_it->second.in_use = false;
  auto& pool_free = free_blocks(segment.pool);

  // Merge with the free neighbours so that a later, larger request can reuse the span.
  if (auto next = std::next(block_it);
      next != segment.blocks_by_offset.end() && !next->second.in_use) {
    pool_free.erase({next->second.size_bytes, handle.segment, next->first});
    block_it->second.size_bytes += next->second.size_bytes;
    segment.blocks_by_offset.erase(next);
  }
  if (block_it != segment.blocks_by_offset.begin()) {
    auto previous = std::prev(block_it);
    if (!previous->second.in_use) {
      pool_free.erase({previous->second.size_bytes, handle.segment, previous->first});
      previous->second.size_bytes += block_it->second.size_bytes;
      segment.blocks_by_offset.erase(block_it);
      block_it = previous;
    }
  }
  pool_free.insert({block_it->second.size_bytes, handle.segment, block_it->first});
}

}  // namespace perfsim::memory
