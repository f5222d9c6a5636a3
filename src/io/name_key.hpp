#pragma once
// How names typed by people are compared with the names of shipped files and their aliases:
// lower-case letters, digits and dots only, so `Llama 3 70B`, `LLAMA3_70B` and `llama3-70b`
// are one name while the dot keeps `gpt3-1.3b` apart from `gpt3-13b`.
#include <cctype>
#include <string>
#include <string_view>

namespace perfsim::io {

inline std::string name_key(std::string_view name) {
  std::string key;
  for (const unsigned char c : name)
    if (std::isalnum(c) || c == '.')
      key += static_cast<char>(std::tolower(c));
  return key;
}

}  // namespace perfsim::io
