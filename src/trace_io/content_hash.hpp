#pragma once
// A fast 64-bit hash of byte strings for cache keys (not cryptographic): eight bytes per step,
// multiply-xorshift mixing, and the splitmix64 finalizer.
#include <cstdint>
#include <string>
#include <string_view>

namespace perfsim::trace_io {

std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed = 0);

// 16 lower-case hex digits.
std::string hash_hex(std::uint64_t hash);

}  // namespace perfsim::trace_io
