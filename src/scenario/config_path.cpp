#include "scenario/config_path.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "perfsim/error.hpp"

namespace perfsim::scenario {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

std::string config_path(const std::string& name_or_file, const char* folder) {
  if (name_or_file.ends_with(".json") || std::filesystem::exists(name_or_file))
    return name_or_file;
  const std::filesystem::path shipped =
      std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs" / folder;
  const std::filesystem::path exact = shipped / (name_or_file + ".json");
  if (std::filesystem::exists(exact))
    return exact.string();
  // A name typed by hand (`Llama3-70B`) finds its file regardless of case; anything else is
  // an error that lists the names there are, rather than "cannot open file".
  std::vector<std::string> known;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(shipped, error)) {
    if (entry.path().extension() != ".json")
      continue;
    const std::string stem = entry.path().stem().string();
    if (lower(stem) == lower(name_or_file))
      return entry.path().string();
    known.push_back(stem);
  }
  if (known.empty())  // no shipped folder (an installed binary): the loader names the path
    return exact.string();
  std::sort(known.begin(), known.end());
  std::string list;
  for (const std::string& name : known)
    list += (list.empty() ? "" : ", ") + name;
  throw InputError(
      name_or_file, "",
      std::string("neither a file nor a name in configs/") + folder + " (" + list + ")");
}

}  // namespace perfsim::scenario
