#include "mpi_sim/cli/pipeline_split_options.hpp"

namespace perfsim::cli {

std::vector<CLI::Option*> add_pipeline_split_options(CLI::App& sub,
                                                     const PipelineSplitFields& split,
                                                     const std::string& help_prefix) {
  std::vector<CLI::Option*> added;
  added.push_back(sub.add_option("--first-stage-layers", split.first_stage_layers,
                                 help_prefix +
                                     "transformer layers of the first pipeline stage, the rest "
                                     "split evenly over the other stages (Megatron "
                                     "--decoder-first-pipeline-num-layers)")
                      ->check(CLI::PositiveNumber));
  added.push_back(sub.add_option("--last-stage-layers", split.last_stage_layers,
                                 help_prefix +
                                     "transformer layers of the last pipeline stage (Megatron "
                                     "--decoder-last-pipeline-num-layers)")
                      ->check(CLI::PositiveNumber));
  for (CLI::Option* flag : add_pipeline_split_accounting_flags(sub, split.account_for_embedding,
                                                               split.account_for_loss, help_prefix))
    added.push_back(flag);
  return added;
}

CLI::Option* add_pipeline_layout_option(CLI::App& sub, std::string& pp_layout,
                                        const std::string& help_prefix) {
  return sub.add_option("--pp-layout", pp_layout,
                        help_prefix +
                            "Megatron-Core's --pipeline-model-parallel-layout, e.g. "
                            "\"Et*4|(t*4|)*14tmL\": E embedding, t transformer layer, m MTP layer, "
                            "L loss, '|' between virtual stages (chunk-major, PP x virtual "
                            "stages of them), X*N and (...)*N repeat, commas ignored; the "
                            "embedding on the first virtual stage, MTP and loss on the last "
                            "(default: none, the other split options apply)");
}

std::vector<CLI::Option*> add_pipeline_split_accounting_flags(CLI::App& sub,
                                                              bool& account_for_embedding,
                                                              bool& account_for_loss,
                                                              const std::string& help_prefix) {
  return {sub.add_flag("--account-for-embedding-in-pipeline-split", account_for_embedding,
                       help_prefix +
                           "the embedding counts as one layer of the even split, so the first "
                           "virtual stage holds one transformer layer fewer (Megatron's flag of "
                           "that name)"),
          sub.add_flag("--account-for-loss-in-pipeline-split", account_for_loss,
                       help_prefix +
                           "the LM head and loss count as one layer of the even split, so the "
                           "last virtual stage holds one transformer layer fewer (Megatron's "
                           "flag of that name)")};
}

}  // namespace perfsim::cli
