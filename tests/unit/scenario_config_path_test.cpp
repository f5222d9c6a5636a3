// Names in run tables and on the command line find their shipped files: exactly, ignoring case,
// by letters, digits and dots alone, or through a file's "aliases"; and no two shipped files
// answer to one name, so none of these lookups is a silent pick among several.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "devices/device_spec.hpp"
#include "io/input_file.hpp"
#include "io/json_document.hpp"
#include "io/name_key.hpp"
#include "perfsim/error.hpp"
#include "scenario/config_path.hpp"

namespace perfsim::scenario {
namespace {

namespace fs = std::filesystem;

std::string stem_of(const std::string& path) {
  return fs::path(path).stem().string();
}

TEST(ConfigPath, FindsAShippedModelByItsNameInAnyCaseOrSpelling) {
  EXPECT_EQ(stem_of(config_path("llama3-70b", "models")), "llama3-70b");
  EXPECT_EQ(stem_of(config_path("Llama3-70B", "models")), "llama3-70b");
  EXPECT_EQ(stem_of(config_path("Llama 3 70B", "models")), "llama3-70b");
  EXPECT_EQ(stem_of(config_path("LLAMA3_70B", "models")), "llama3-70b");
  EXPECT_EQ(stem_of(config_path("Mixtral 8x7B", "models")), "mixtral-8x7b");
}

TEST(ConfigPath, FindsAModelThroughItsAliasesAndHuggingFaceIds) {
  EXPECT_EQ(stem_of(config_path("Llama-3.1-70B", "models")), "llama3-70b");
  EXPECT_EQ(stem_of(config_path("meta-llama/Meta-Llama-3.1-405B", "models")), "llama3-405b");
  EXPECT_EQ(stem_of(config_path("mistralai/Mixtral-8x7B-v0.1", "models")), "mixtral-8x7b");
  EXPECT_EQ(stem_of(config_path("GPT-3", "models")), "gpt3-175b");
  EXPECT_EQ(stem_of(config_path("GPT-3 XL", "models")), "gpt3-1.3b");
}

TEST(ConfigPath, DotsTellVersionsAndSizesApart) {
  EXPECT_EQ(stem_of(config_path("GPT-3 1.3B", "models")), "gpt3-1.3b");
  EXPECT_EQ(stem_of(config_path("gpt3 13b", "models")), "gpt3-13b");
  EXPECT_EQ(stem_of(config_path("Qwen2.5-7B", "models")), "qwen2.5-7b");
}

TEST(ConfigPath, FindsDevicesByTheirAliasesAndSpellings) {
  const std::string devices = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";
  EXPECT_EQ(devices::find_device(devices, "h100 sxm").name, "H100-SXM");
  EXPECT_EQ(devices::find_device(devices, "NVIDIA H100 80GB HBM3").name, "H100-SXM");
  EXPECT_EQ(devices::find_device(devices, "a100_80gb").name, "A100-80GB");
  EXPECT_THROW(devices::find_device(devices, "B200"), InputError);
  EXPECT_EQ(stem_of(config_path("NVIDIA H100 80GB HBM3", "devices")), "H100-SXM");
  EXPECT_EQ(stem_of(config_path("h100 sxm", "devices")), "H100-SXM");
}

TEST(ConfigPath, AnUnknownNameListsTheNamesThereAre) {
  try {
    config_path("llama9-1t", "models");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("llama9-1t"), std::string::npos) << message;
    EXPECT_NE(message.find("llama3-70b"), std::string::npos) << message;
  }
  EXPECT_THROW(config_path("", "models"), InputError);
  EXPECT_THROW(config_path("---", "models"), InputError);
}

// Every file name and alias of a shipped folder has a key of its own, so every name above
// resolves to one file.
TEST(ConfigPath, NoTwoShippedFilesAnswerToOneName) {
  for (const char* folder : {"models", "devices", "topologies"}) {
    SCOPED_TRACE(folder);
    std::map<std::string, std::string> owner;  // key -> file stem
    int names = 0;
    for (const auto& entry :
         fs::directory_iterator(fs::path(PERFSIM_SOURCE_DIR) / "configs" / folder)) {
      if (entry.path().extension() != ".json")
        continue;
      const std::string stem = entry.path().stem().string();
      std::vector<std::string> keys = {io::name_key(stem)};
      const nlohmann::json doc = io::parse_json_document(
          io::read_file_decompressed(entry.path().string()), entry.path().string());
      if (doc.contains("aliases"))
        for (const nlohmann::json& alias : doc.at("aliases"))
          keys.push_back(io::name_key(alias.get<std::string>()));
      for (const std::string& key : keys) {
        ++names;
        const auto [it, inserted] = owner.emplace(key, stem);
        EXPECT_TRUE(inserted || it->second == stem)
            << "'" << key << "' names both " << it->second << " and " << stem;
      }
    }
    EXPECT_GT(names, 5);
  }
}

}  // namespace
}  // namespace perfsim::scenario
