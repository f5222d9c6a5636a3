// LLM model files (configs/models/*.json).
#include "fuzz_input.hpp"
#include "generators/llm/llm_model_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return perfsim::fuzz::run_loader(data, size, [](const std::string& text) {
    perfsim::generators::llm::parse_transformer_config(text, perfsim::fuzz::kSource);
  });
}
