#include "scenario/config_path.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "io/input_file.hpp"
#include "io/json_document.hpp"
#include "io/name_key.hpp"
#include "perfsim/error.hpp"

namespace perfsim::scenario {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The names a shipped file lists under "aliases"; a file that does not parse lists none here
// (its own loader reports it when it is chosen).
std::vector<std::string> file_aliases(const std::filesystem::path& file) {
  std::vector<std::string> aliases;
  try {
    const nlohmann::json doc =
        io::parse_json_document(io::read_file_decompressed(file.string()), file.string());
    if (doc.is_object() && doc.contains("aliases") && doc.at("aliases").is_array())
      for (const nlohmann::json& alias : doc.at("aliases"))
        if (alias.is_string())
          aliases.push_back(alias.get<std::string>());
  } catch (const std::exception&) {
  }
  return aliases;
}

std::string join(const std::set<std::string>& names) {
  std::string list;
  for (const std::string& name : names)
    list += (list.empty() ? "" : ", ") + name;
  return list;
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
  std::map<std::string, std::filesystem::path> files;  // stem -> file, sorted by name
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(shipped, error))
    if (entry.path().extension() == ".json")
      files.emplace(entry.path().stem().string(), entry.path());
  if (files.empty())  // no shipped folder (an installed binary): the loader names the path
    return exact.string();
  // A name typed by hand (`Llama3-70B`) finds its file regardless of case.
  for (const auto& [stem, file] : files)
    if (lower(stem) == lower(name_or_file))
      return file.string();
  const std::string name = name_or_file.substr(name_or_file.find_last_of('/') + 1);
  const std::string key = io::name_key(name);
  std::set<std::string> matches;
  if (!key.empty()) {
    for (const auto& [stem, file] : files)
      if (io::name_key(stem) == key)
        matches.insert(stem);
    if (matches.empty())
      for (const auto& [stem, file] : files)
        for (const std::string& alias : file_aliases(file))
          if (io::name_key(alias) == key)
            matches.insert(stem);
  }
  if (matches.size() == 1)
    return files.at(*matches.begin()).string();
  if (matches.size() > 1)
    throw InputError(name_or_file, "",
                     std::string("names more than one file in configs/") + folder + " (" +
                         join(matches) + "): give the file name");
  std::set<std::string> known;
  for (const auto& [stem, file] : files)
    known.insert(stem);
  throw InputError(
      name_or_file, "",
      std::string("neither a file nor a name in configs/") + folder + " (" + join(known) + ")");
}

}  // namespace perfsim::scenario
