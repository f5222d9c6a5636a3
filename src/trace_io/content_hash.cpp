#include "trace_io/content_hash.hpp"

#include <cstring>

namespace perfsim::trace_io {
namespace {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kMixA = 0xbf58476d1ce4e5b9ULL;
constexpr std::uint64_t kMixB = 0x94d049bb133111ebULL;

constexpr std::uint64_t finalize(std::uint64_t x) {
  x ^= x >> 30;
  x *= kMixA;
  x ^= x >> 27;
  x *= kMixB;
  x ^= x >> 31;
  return x;
}

constexpr std::uint64_t rotate_left(std::uint64_t x, int bits) {
  return (x << bits) | (x >> (64 - bits));
}

}  // namespace

std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed) {
  std::uint64_t state = seed ^ (static_cast<std::uint64_t>(bytes.size()) * kGolden);
  const char* data = bytes.data();
  std::size_t remaining = bytes.size();
  while (remaining >= 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, data, 8);
    state = rotate_left(state ^ (word * kMixA), 31) * kGolden;
    data += 8;
    remaining -= 8;
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, data, remaining);
  state = rotate_left(state ^ ((tail + remaining) * kMixB), 27) * kGolden;
  return finalize(state);
}

std::string hash_hex(std::uint64_t hash) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i) {
    text[static_cast<std::size_t>(i)] = kDigits[hash & 0xf];
    hash >>= 4;
  }
  return text;
}

}  // namespace perfsim::trace_io
