#pragma once
// The pipeline split of a run-table row that gives none (no pp_layers, pp_layout, first/last
// stage layers or account_for_* cell) when its layers do not divide over PP x virtual stages.
// Megatron-LM would refuse such a layout, so the published run used some uneven split; the one
// assumed is the large-model recipes' where it divides (Megatron-Bridge and NeMo count the
// embedding and the loss as layers: Llama 3.1 405B's 126 layers on PP 8 x V 8; the Llama 3
// paper's 405B on PP 16 drops one layer from the first and the last stage, the same split),
// else the loss alone counted as a layer (the last stage, which holds the LM head, one layer
// short), else the layers spread as evenly as they go, the extra ones on the virtual stages
// after the first. Stated in the row's layout, never silent.
#include <optional>
#include <string>
#include <vector>

namespace perfsim::scenario {

struct InferredPipelineSplit {
  bool account_for_embedding = false;
  bool account_for_loss = false;
  std::vector<int> virtual_stage_layers;  // PP x V entries, chunk-major; empty: the accounting
};

// nullopt when `layers` divide evenly over pp x virtual_stages (nothing to assume).
std::optional<InferredPipelineSplit> infer_pipeline_split(int layers, int pp, int virtual_stages);

}  // namespace perfsim::scenario
