// Megatron-Core's --pipeline-model-parallel-layout strings (llm_pipeline_layout.hpp) read by
// perfsim's parser: the elements of every virtual stage for strings with repetition, groups and
// cosmetic commas, worked out by hand from PipelineParallelLayerLayout.parse_str_to_list; the
// errors with the character at fault; and the split they give (llm_pipeline_split.hpp): the
// transformer layers per virtual stage, the same as the equivalent pp_layers, and the
// placements perfsim refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "generators/llm/llm_pipeline_layout.hpp"
#include "generators/llm/llm_pipeline_split.hpp"
#include "perfsim/error.hpp"
#include "support/tiny_llm.hpp"
#include "validation/run_table.hpp"

namespace perfsim::generators::llm {
namespace {

// Each virtual stage as text: "E3" embedding and three layers, "2" two layers, "1mL", "" empty.
std::vector<std::string> stage_texts(const std::vector<LayoutStage>& stages) {
  std::vector<std::string> texts;
  for (const LayoutStage& stage : stages) {
    std::string text = std::string(static_cast<std::size_t>(stage.embedding), 'E');
    if (stage.decoder > 0)
      text += std::to_string(stage.decoder);
    text += std::string(static_cast<std::size_t>(stage.mtp), 'm');
    text += std::string(static_cast<std::size_t>(stage.loss), 'L');
    texts.push_back(text);
  }
  return texts;
}

std::vector<std::string> repeated(const std::string& text, int times) {
  return std::vector<std::string>(static_cast<std::size_t>(times), text);
}

std::vector<std::string> joined(std::vector<std::vector<std::string>> parts) {
  std::vector<std::string> all;
  for (const auto& part : parts)
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

TEST(PipelineLayout, MegatronDocstringExampleWithAGroupAndACosmeticComma) {
  // parse_str_to_list's example: [E t t t] + [t t] * 29 + [m] + [L].
  const std::vector<LayoutStage> stages = parse_pipeline_layout("Ettt|(tt|)*29,m|L", "", "");
  EXPECT_EQ(stage_texts(stages), joined({{"E3"}, repeated("2", 29), {"m"}, {"L"}}));
  EXPECT_EQ(stages.front().embedding_position, 1);
  EXPECT_EQ(stages[30].mtp_position, 15);  // the ',' at 14 still counts as a character
  EXPECT_EQ(stages[31].loss_position, 17);
  // The same with t*3 (Megatron's documentation example for PP 16 x VPP 2).
  EXPECT_EQ(stage_texts(parse_pipeline_layout("Et*3|(tt|)*29,m|L", "", "")), stage_texts(stages));
}

TEST(PipelineLayout, MegatronBridgeDeepSeekV3Pp16) {
  // Megatron-Bridge's DeepSeek-V3 layout for (PP 16, VP 1) and (PP 8, VP 2): the embedding and
  // four layers, 14 x four layers, one layer with the MTP layer and the loss.
  EXPECT_EQ(stage_texts(parse_pipeline_layout("Et*4|(t*4|)*14tmL", "", "")),
            joined({{"E4"}, repeated("4", 14), {"1mL"}}));
}

TEST(PipelineLayout, RepetitionOfAnyElementIncludingSeparatorsAndZero) {
  // (t|)*2 -> t|t|; t*0 is nothing; the stage before it is empty.
  EXPECT_EQ(stage_texts(parse_pipeline_layout("E|t*0|(t|)*2,t*3L", "", "")),
            (std::vector<std::string>{"E", "", "1", "1", "3L"}));
  // |*3 -> three separators, two empty stages between.
  EXPECT_EQ(stage_texts(parse_pipeline_layout("Et|*3tL", "", "")),
            (std::vector<std::string>{"E1", "", "", "1L"}));
  // Commas go first: t*1,2 reads t*12, as Megatron's replace(",", "") makes it.
  EXPECT_EQ(stage_texts(parse_pipeline_layout("Et*1,2|L", "", "")),
            (std::vector<std::string>{"E12", "L"}));
  // Repetition inside a group, the group repeated.
  EXPECT_EQ(stage_texts(parse_pipeline_layout("E(t*2|)*3tL", "", "")),
            (std::vector<std::string>{"E2", "2", "2", "1L"}));
}

// The problem text of the error parse_pipeline_layout throws, with its file and location.
std::string parse_error(const std::string& layout) {
  try {
    parse_pipeline_layout(layout, "runs.csv line 3", "pp_layout");
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "runs.csv line 3");
    EXPECT_EQ(error.location(), "pp_layout");
    return error.problem();
  }
  ADD_FAILURE() << layout << " parsed";
  return "";
}

TEST(PipelineLayout, ErrorsNameTheCharacterAtFault) {
  auto starts = [](const std::string& text, const std::string& prefix) {
    return text.rfind(prefix, 0) == 0;
  };
  EXPECT_PRED2(starts, parse_error("Et*3|tx|L"), "character 7: 'x' is not a layout element");
  EXPECT_PRED2(starts, parse_error("Et*|L"), "character 3: '*' needs a count");
  EXPECT_PRED2(starts, parse_error("E*2tL"), "character 1: a second embedding");  // E E t L
  EXPECT_PRED2(starts, parse_error("*2EtL"), "character 1: '*' repeats nothing");
  EXPECT_PRED2(starts, parse_error("E((t|)*2)*2L"), "character 3: '(' inside a group");
  EXPECT_PRED2(starts, parse_error("E(t|t|L"), "character 2: '(' is never closed");
  EXPECT_PRED2(starts, parse_error("E(t|)L"), "character 5: a group needs a count");
  EXPECT_PRED2(starts, parse_error("E()*2tL"), "character 2: empty group");
  EXPECT_PRED2(starts, parse_error("Et)*2|L"), "character 3: ')' closes no '('");
  EXPECT_PRED2(starts, parse_error("Et*2*3|L"), "character 5: a count cannot be repeated");
  EXPECT_PRED2(starts, parse_error("tE|L"), "character 1: the layout must start with the embed");
  EXPECT_PRED2(starts, parse_error("Et|EtL"), "character 4: a second embedding 'E'");
  EXPECT_PRED2(starts, parse_error("Et|L|t"),
               "character 6: an element after the loss 'L' at "
               "character 4");
  EXPECT_PRED2(starts, parse_error("Etm|tL"),
               "character 5: a transformer layer 't' after the "
               "MTP layer 'm' at character 3");
  EXPECT_PRED2(starts, parse_error("Et|t"), "character 4: the layout must end with the loss");
  EXPECT_PRED2(starts, parse_error(""), "character 1: the layout holds no element");
  EXPECT_PRED2(starts, parse_error("Et tL"), "character 3: ' ' is not a layout element");
  EXPECT_PRED2(starts, parse_error("Et*99999999L"), "character 3: the count is above");
}

TransformerConfig model_with(int layers, int mtp_layers) {
  TransformerConfig model = test_support::tiny_gpt();
  model.layers = layers;
  model.mtp_num_layers = mtp_layers;
  return model;
}

ParallelConfig with_layout(int pp, int chunks, const std::string& layout) {
  ParallelConfig parallel;
  parallel.pp = pp;
  parallel.virtual_stages = chunks;
  parallel.pp_layout = layout;
  return parallel;
}

TEST(PipelineLayoutSplit, Llama3_405bPp16MatchesTheEquivalentPpLayers) {
  // Llama 3's paper: 126 layers on 16 stages, one layer fewer on the first and the last.
  const TransformerConfig model = model_with(126, 0);
  const std::vector<int> layers =
      virtual_stage_layers(model, with_layout(16, 1, "Et*7|(t*8|)*14,t*7L"));
  std::vector<int> expected(16, 8);
  expected.front() = expected.back() = 7;
  EXPECT_EQ(layers, expected);
  ParallelConfig listed;
  listed.pp = 16;
  listed.pp_layers = expected;
  EXPECT_EQ(virtual_stage_layers(model, listed), layers);
}

TEST(PipelineLayoutSplit, DeepSeekV3OnPp8Vp2HoldsTheMtpWithTheLoss) {
  // Megatron-Bridge's (PP 8, VP 2) DeepSeek-V3 layout: 16 virtual stages, chunk-major.
  const TransformerConfig model = model_with(61, 1);
  const ParallelConfig parallel = with_layout(8, 2, "Et*4|(t*4|)*14tmL");
  std::vector<int> expected(16, 4);
  expected.back() = 1;
  EXPECT_EQ(virtual_stage_layers(model, parallel), expected);
  EXPECT_EQ(layers_of_stage(model, parallel, 0), 8);  // virtual stages 0 and 8
  EXPECT_EQ(layers_of_stage(model, parallel, 7), 5);  // virtual stages 7 and 15
}

std::string split_error(const TransformerConfig& model, const ParallelConfig& parallel) {
  try {
    virtual_stage_layers(model, parallel);
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "pp_layout");
    return error.problem();
  }
  ADD_FAILURE() << parallel.pp_layout << " split";
  return "";
}

TEST(PipelineLayoutSplit, EndStagesMayHoldOnlyTheEmbeddingOrTheLoss) {
  // As the accounting switches allow (a stage whose accounted layer leaves it none).
  const TransformerConfig model = model_with(4, 0);
  EXPECT_EQ(virtual_stage_layers(model, with_layout(3, 1, "E|t*4|L")), (std::vector<int>{0, 4, 0}));
  EXPECT_EQ(layers_of_stage(model, with_layout(3, 1, "E|t*4|L"), 0), 0);
}

TEST(PipelineLayoutSplit, RefusesWhatTheGeneratorCannotPlace) {
  const TransformerConfig deepseek = model_with(61, 1);
  // Megatron's documentation example puts the MTP layer on virtual stage 30 (stage 14, chunk 1)
  // and the loss alone on 31: standalone MTP, not modelled.
  EXPECT_NE(split_error(deepseek, with_layout(16, 2, "Et*3|(tt|)*29,m|L"))
                .find("'m' at character 15 is on virtual stage 30 (stage 14, chunk 1)"),
            std::string::npos);
  // 16 virtual stages on PP 16 x VP 2.
  EXPECT_NE(split_error(deepseek, with_layout(16, 2, "Et*4|(t*4|)*14tmL"))
                .find("has 16 virtual stages ('|' separates them), PP x virtual stages is 32"),
            std::string::npos);
  EXPECT_NE(split_error(deepseek, with_layout(8, 1, "Et*4|(t*4|)*14tmL"))
                .find("(virtual stages 2 would match)"),
            std::string::npos);
  // Layer counts against the model.
  EXPECT_NE(split_error(model_with(60, 1), with_layout(16, 1, "Et*4|(t*4|)*14tmL"))
                .find("holds 61 transformer layers 't', the model has 60"),
            std::string::npos);
  EXPECT_NE(split_error(model_with(61, 0), with_layout(16, 1, "Et*4|(t*4|)*14tmL"))
                .find("holds 1 MTP layers 'm', the model has 0"),
            std::string::npos);
  // The embedding after an empty first virtual stage (Megatron's check sees only the order).
  EXPECT_NE(split_error(model_with(4, 0), with_layout(2, 1, "|Et*4L"))
                .find("'E' at character 2 is on virtual stage 1 (stage 1, chunk 0)"),
            std::string::npos);
  // A middle pipeline stage with nothing on it.
  EXPECT_NE(split_error(model_with(4, 0), with_layout(3, 1, "Et*2||t*2L"))
                .find("stage 1 holds no transformer layer"),
            std::string::npos);
  // Not beside another split.
  ParallelConfig both = with_layout(2, 1, "Et*2|t*2L");
  both.first_stage_layers = 2;
  EXPECT_NE(split_error(model_with(4, 0), both).find("no pp_layers, first/last-stage layers"),
            std::string::npos);
  // A syntax error comes with the layout and its character.
  EXPECT_EQ(split_error(model_with(4, 0), with_layout(2, 1, "Et*|L")).rfind("\"Et*|L\" char", 0),
            0u);
}

TEST(PipelineLayoutSplit, AnUnevenSplitNamesItsOptions) {
  ParallelConfig parallel;
  parallel.pp = 16;
  try {
    virtual_stage_layers(model_with(126, 0), parallel);
    ADD_FAILURE() << "126 layers split over 16 stages";
  } catch (const InputError& error) {
    const std::string problem = error.problem();
    EXPECT_EQ(problem.rfind("layers 126 is not divisible by 16; ", 0), 0u) << problem;
    for (const char* option : {"pp_layers (--pp-layers)", "pp_layout (--pp-layout",
                               "first_stage_layers/last_stage_layers", "account_for_embedding"})
      EXPECT_NE(problem.find(option), std::string::npos) << option;
  }
}

}  // namespace
}  // namespace perfsim::generators::llm

namespace perfsim::validation {
namespace {

TEST(PipelineLayoutRunTable, ReadsPpLayersAndPpLayout) {
  const std::string header =
      "name,model,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,pp_layers,pp_layout,"
      "last_stage_layers,measured_iteration_s\n";
  const std::string csv =
      header +
      "a,llama3-8b,4,1,4,1,1,8,H100-SXM,hgx-h100,7;9; 9 ;7,,,1.0\n"
      "b,llama3-8b,4,1,4,1,1,8,H100-SXM,hgx-h100,,\"Et*7,|(t*9|)*2,t*7L\",,1.0\n"
      "c,llama3-8b,4,1,4,1,1,8,H100-SXM,hgx-h100,7;x;9;7,,,1.0\n"
      "d,llama3-8b,4,1,4,1,1,8,H100-SXM,hgx-h100,,Et*|L,,1.0\n"
      "e,llama3-8b,4,1,4,1,1,8,H100-SXM,hgx-h100,,,0,1.0\n"
      "f,llama3-8b,4,1,4,1,1,8,H100-SXM,hgx-h100,7;;9,,,1.0\n";
  const RunTable table = parse_run_table(csv, "runs.csv");
  ASSERT_EQ(table.rows.size(), 6u);
  EXPECT_EQ(table.rows[0].error, "");
  EXPECT_EQ(table.rows[0].pp_layers, (std::vector<int>{7, 9, 9, 7}));
  EXPECT_EQ(table.rows[0].pp_layout, "");
  EXPECT_EQ(table.rows[1].error, "");
  EXPECT_TRUE(table.rows[1].pp_layers.empty());
  EXPECT_EQ(table.rows[1].pp_layout, "Et*7,|(t*9|)*2,t*7L");  // the quoted cell, commas kept
  EXPECT_EQ(table.rows[2].error.rfind("pp_layers: entry 2 \"x\" is not a layer count", 0), 0u)
      << table.rows[2].error;
  EXPECT_EQ(table.rows[3].error.rfind("pp_layout: character 3: '*' needs a count", 0), 0u)
      << table.rows[3].error;
  // Megatron-Core refuses a last stage of 0 layers, as `simulate --last-stage-layers 0` does.
  EXPECT_EQ(table.rows[4].error.rfind("last_stage_layers: 0 is refused", 0), 0u)
      << table.rows[4].error;
  EXPECT_EQ(table.rows[5].error.rfind("pp_layers: entry 2 \"\"", 0), 0u) << table.rows[5].error;
}

}  // namespace
}  // namespace perfsim::validation
