#pragma once
// Megatron-Core's --pipeline-model-parallel-layout string (PipelineParallelLayerLayout:
// parse_str_to_list and the model-independent checks of validate_layer_layout), read by
// perfsim's own parser:
//   - one character per element: E the embedding, t a transformer (decoder) layer, m an MTP
//     layer, L the loss; '|' separates virtual stages, listed in Megatron's order
//     (chunk x PP + stage);
//   - commas are cosmetic and removed first (so "t*1,2" reads "t*12", as in Megatron);
//   - X*N repeats one character (any of E t m L |) N times, N >= 0;
//   - (...)*N repeats a group N times; the group may hold '|' and X*N but no other group
//     (Megatron expands one level of parentheses);
//   - the whole layout starts with the one E and ends with the one L; no t after the first m.
// Anything else is an InputError naming the 1-based character of the string at fault.
// Which virtual stages perfsim can place the elements on is llm_pipeline_split.cpp's job.
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::generators::llm {

// One virtual stage of a layout: how many of each element it holds, and where (1-based
// characters of the layout string; 0 where the stage holds none).
struct LayoutStage {
  int embedding = 0;
  int decoder = 0;
  int mtp = 0;
  int loss = 0;
  int position = 0;  // where the stage's text starts
  int embedding_position = 0;
  int mtp_position = 0;  // the stage's first m
  int loss_position = 0;
};

// The virtual stages of `layout` in its order. Throws InputError(source, field,
// "character N: problem").
std::vector<LayoutStage> parse_pipeline_layout(std::string_view layout, const std::string& source,
                                               const std::string& field);

}  // namespace perfsim::generators::llm
