#pragma once
// Numbers read from input files, checked where they are read: finite, inside a range the
// simulator can work with, whole where they count something, and sizes multiplied without
// int64 overflow. Every failure is an InputError naming the file and the field.
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "perfsim/error.hpp"

namespace perfsim::io {

// A duration of 1e12 us is 11.6 days: far beyond one training iteration, small enough that
// sums of many durations stay exact to well under a microsecond.
inline constexpr double kMaxDurationUs = 1e12;
// Profiler timestamps are microseconds since the epoch (about 1.7e15 in 2023).
inline constexpr double kMaxAbsTimestampUs = 1e17;
// 1 PiB: no tensor or message of one rank comes near it, and products of it with element
// sizes or rank counts stay far inside int64.
inline constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;
inline constexpr std::int64_t kMaxElements = kMaxBytes;
// Ranks and process-group sizes: a million GPUs is beyond any cluster the models describe.
inline constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;
// Doubles hold every integer up to 2^53 exactly: a count beyond that was not counted.
inline constexpr std::int64_t kMaxExactCount = std::int64_t{1} << 53;

inline std::string format_number(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

// `value` if it is finite and within [minimum, maximum].
inline double checked_real(double value, double minimum, double maximum, const std::string& file,
                           const std::string& field) {
  if (!std::isfinite(value))
    throw InputError(file, field, "must be a finite number, got " + format_number(value));
  if (value < minimum || value > maximum)
    throw InputError(file, field,
                     format_number(value) + " is outside [" + format_number(minimum) + ", " +
                         format_number(maximum) + "]");
  return value;
}

inline std::int64_t checked_integer(std::int64_t value, std::int64_t minimum, std::int64_t maximum,
                                    const std::string& file, const std::string& field) {
  if (value < minimum || value > maximum)
    throw InputError(file, field,
                     std::to_string(value) + " is outside [" + std::to_string(minimum) + ", " +
                         std::to_string(maximum) + "]");
  return value;
}

// A count written as a JSON number that may come as a double (1e3): whole and in range.
inline std::int64_t checked_whole(double value, std::int64_t minimum, std::int64_t maximum,
                                  const std::string& file, const std::string& field) {
  if (!std::isfinite(value) || value != std::floor(value))
    throw InputError(file, field, "must be a whole number, got " + format_number(value));
  if (value < static_cast<double>(minimum) || value > static_cast<double>(maximum))
    throw InputError(file, field,
                     format_number(value) + " is outside [" + std::to_string(minimum) + ", " +
                         std::to_string(maximum) + "]");
  return static_cast<std::int64_t>(value);
}

// a * b computed in 128 bits; an InputError when it is negative or above `limit`.
inline std::int64_t checked_product(std::int64_t a, std::int64_t b, std::int64_t limit,
                                    const std::string& file, const std::string& field) {
  const __int128 product = static_cast<__int128>(a) * static_cast<__int128>(b);
  if (product < 0 || product > static_cast<__int128>(limit))
    throw InputError(file, field,
                     std::to_string(a) + " x " + std::to_string(b) +
                         (product < 0 ? " is negative" : " exceeds " + std::to_string(limit)));
  return static_cast<std::int64_t>(product);
}

// Bytes of `elements` elements of `element_bytes` each, at most kMaxBytes.
inline std::int64_t checked_bytes(std::int64_t elements, std::int64_t element_bytes,
                                  const std::string& file, const std::string& field) {
  if (elements < 0)
    throw InputError(file, field, "negative element count " + std::to_string(elements));
  return checked_product(elements, element_bytes, kMaxBytes, file, field);
}

// Elements of a tensor of this shape: every extent non-negative, the product at most
// kMaxElements (a zero extent makes an empty tensor whatever the others say).
inline std::int64_t checked_numel(const std::vector<std::int64_t>& shape, const std::string& file,
                                  const std::string& field) {
  for (std::int64_t extent : shape) {
    if (extent < 0)
      throw InputError(file, field, "negative tensor extent " + std::to_string(extent));
    if (extent == 0)
      return 0;
  }
  __int128 numel = 1;
  for (std::int64_t extent : shape) {
    numel *= extent;  // both factors <= 2^63 before the check below: fits 128 bits
    if (numel > static_cast<__int128>(kMaxElements))
      throw InputError(file, field,
                       "tensor of more than " + std::to_string(kMaxElements) + " elements");
  }
  return static_cast<std::int64_t>(numel);
}

// Adds without overflow; an InputError above `limit`.
inline std::int64_t checked_sum(std::int64_t a, std::int64_t b, std::int64_t limit,
                                const std::string& file, const std::string& field) {
  const __int128 sum = static_cast<__int128>(a) + static_cast<__int128>(b);
  if (sum < 0 || sum > static_cast<__int128>(limit))
    throw InputError(file, field, "total exceeds " + std::to_string(limit));
  return static_cast<std::int64_t>(sum);
}

}  // namespace perfsim::io
