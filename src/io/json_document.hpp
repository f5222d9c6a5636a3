#pragma once
// Parsing a whole JSON input file (models, devices, topologies, assets) with the error every
// reader gives: the file, the byte where parsing stopped, and nlohmann's reason.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "perfsim/error.hpp"

namespace perfsim::io {

inline nlohmann::json parse_json_document(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::out_of_range& error) {
    // nlohmann reports a number beyond double (1e400) as out_of_range, not parse_error.
    throw InputError(source, "", std::string("invalid JSON number: ") + error.what());
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(source, "byte " + std::to_string(error.byte),
                     std::string("invalid JSON: ") + error.what());
  }
}

}  // namespace perfsim::io
