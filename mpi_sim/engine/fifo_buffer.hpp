#pragma once
// A first-in first-out queue on one vector: std::deque allocates a 512-byte block and its map
// as soon as it is constructed, which for a simulated rank that queues a few entries (65,536
// synthetic ranks of 40 ops each) cost more than the rank's ops. Popped entries are dropped
// from the front once they are the larger part of the vector, so a queue that never empties
// still holds at most twice what is queued.
#include <cstddef>
#include <utility>
#include <vector>

namespace perfsim::engine {

template <class T>
class FifoBuffer {
 public:
  bool empty() const { return head_ == items_.size(); }
  std::size_t size() const { return items_.size() - head_; }
  void push_back(const T& item) { items_.push_back(item); }
  void swap(FifoBuffer& other) noexcept {
    items_.swap(other.items_);
    std::swap(head_, other.head_);
  }
  const T& front() const { return items_[head_]; }
  void pop_front() {
    if (++head_ == items_.size()) {
      // Emptied: a long queue (a pipeline bubble's kernels) gives its block back rather than
      // every rank keeping its largest queue to the end.
      if (items_.capacity() > kKeptCapacity)
        std::vector<T>().swap(items_);
      items_.clear();
      head_ = 0;
    } else if (head_ >= kCompactAfter && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  static constexpr std::size_t kCompactAfter = 1024;
  static constexpr std::size_t kKeptCapacity = 64;
  std::vector<T> items_;
  std::size_t head_ = 0;
};

}  // namespace perfsim::engine
