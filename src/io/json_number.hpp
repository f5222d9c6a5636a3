#pragma once
// Numeric fields of nlohmann JSON documents, checked as in checked_number.hpp. Templates so that
// both nlohmann::json and nlohmann::ordered_json documents use them.
#include <cstdint>
#include <limits>
#include <string>

#include "io/checked_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::io {

// An integer field (a JSON number without fraction or exponent) within [minimum, maximum].
// Unsigned values above int64 and floats are errors, never truncated.
template <class Json>
std::int64_t json_integer(const Json& value, std::int64_t minimum, std::int64_t maximum,
                          const std::string& file, const std::string& field) {
  if (!value.is_number_integer())
    throw InputError(file, field, "must be an integer, got " + value.dump());
  if (value.is_number_unsigned() &&
      value.template get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw InputError(file, field,
                     value.dump() + " is outside [" + std::to_string(minimum) + ", " +
                         std::to_string(maximum) + "]");
  return checked_integer(value.template get<std::int64_t>(), minimum, maximum, file, field);
}

// An int field: json_integer with bounds that fit int.
template <class Json>
int json_int(const Json& value, int minimum, int maximum, const std::string& file,
             const std::string& field) {
  return static_cast<int>(json_integer(value, minimum, maximum, file, field));
}

// A real field: a finite JSON number within [minimum, maximum].
template <class Json>
double json_real(const Json& value, double minimum, double maximum, const std::string& file,
                 const std::string& field) {
  if (!value.is_number())
    throw InputError(file, field, "must be a number, got " + value.dump());
  return checked_real(value.template get<double>(), minimum, maximum, file, field);
}

}  // namespace perfsim::io
