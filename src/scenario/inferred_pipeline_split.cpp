#include "scenario/inferred_pipeline_split.hpp"

namespace perfsim::scenario {

std::optional<InferredPipelineSplit> infer_pipeline_split(int layers, int pp, int virtual_stages) {
  const int stages = pp * virtual_stages;
  if (stages <= 1 || layers <= 0 || layers % stages == 0)
    return std::nullopt;
  InferredPipelineSplit split;
  // Counting the embedding and the loss takes one layer from the first and the last virtual
  // stage, which must keep at least one (get_num_layers_to_build gives 0 layers otherwise).
  if ((layers + 2) % stages == 0 && (layers + 2) / stages >= 2) {
    split.account_for_embedding = split.account_for_loss = true;
    return split;
  }
  if ((layers + 1) % stages == 0 && (layers + 1) / stages >= 2) {
    split.account_for_loss = true;
    return split;
  }
  const int base = layers / stages, extra = layers % stages;
  split.virtual_stage_layers.assign(static_cast<std::size_t>(stages), base);
  // The first virtual stage holds the embedding: the extra layers go to the ones after it.
  for (int i = 0; i < extra; ++i)
    ++split.virtual_stage_layers[static_cast<std::size_t>(1 + i)];
  return split;
}

}  // namespace perfsim::scenario
