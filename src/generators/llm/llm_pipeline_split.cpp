#include "generators/llm/llm_pipeline_split.hpp"

#include <numeric>

#include "generators/llm/llm_pipeline_layout.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

struct Split {
  std::vector<int> layers;  // per virtual stage, chunk x PP + stage
  std::string field;        // the ParallelConfig field at fault when `problem` is set
  std::string problem;
};

Split failed(std::string field, std::string problem) {
  return {{}, std::move(field), std::move(problem)};
}

std::string text(long value) {
  return std::to_string(value);
}

// Each stage's layers divided evenly over its chunks, in virtual-stage order.
Split chunks_of_stages(const std::vector<int>& stage_layers, int chunks, const std::string& field) {
  const int stages = static_cast<int>(stage_layers.size());
  Split split;
  split.layers.assign(static_cast<std::size_t>(stages * chunks), 0);
  for (int stage = 0; stage < stages; ++stage) {
    const int layers = stage_layers[static_cast<std::size_t>(stage)];
    if (layers % chunks != 0)
      return failed(field, "stage " + text(stage) + "'s " + text(layers) +
                               " layers do not divide over its " + text(chunks) + " chunks");
    for (int chunk = 0; chunk < chunks; ++chunk)
      split.layers[static_cast<std::size_t>(chunk * stages + stage)] = layers / chunks;
  }
  return split;
}

Split from_list(const TransformerConfig& model, const ParallelConfig& parallel) {
  const int p = parallel.pp, v = parallel.virtual_stages;
  const std::vector<int>& list = parallel.pp_layers;
  if (parallel.first_stage_layers > 0 || parallel.last_stage_layers > 0 ||
      parallel.account_for_embedding || parallel.account_for_loss)
    return failed("pp_layers",
                  "gives every stage's layers: no first/last-stage layers or embedding/loss "
                  "accounting beside it");
  const long sum = std::accumulate(list.begin(), list.end(), 0L);
  if (sum != model.layers)
    return failed("pp_layers",
                  "the stages hold " + text(sum) + " layers, the model has " + text(model.layers));
  if (static_cast<int>(list.size()) == p) {
    for (int layers : list)
      if (layers <= 0)
        return failed("pp_layers", "every stage needs at least one layer");
    return chunks_of_stages(list, v, "pp_layers");
  }
  if (v > 1 && static_cast<int>(list.size()) == p * v) {
    for (int stage = 0; stage < p; ++stage) {
      int stage_total = 0;
      for (int chunk = 0; chunk < v; ++chunk) {
        const int layers = list[static_cast<std::size_t>(chunk * p + stage)];
        if (layers < 0)
          return failed("pp_layers", "a virtual stage cannot hold fewer than zero layers");
        stage_total += layers;
      }
      if (stage_total == 0)
        return failed("pp_layers", "stage " + text(stage) + " holds no layer");
    }
    return {list, "", ""};
  }
  return failed("pp_layers", "needs one entry per pipeline stage (" + text(p) + ")" +
                                 (v > 1 ? " or per virtual stage (" + text(p * v) + ")" : "") +
                                 ", got " + text(static_cast<long>(list.size())));
}

// Where virtual stage `index` sits: "virtual stage 5 (stage 1, chunk 1)".
std::string virtual_stage_name(int index, int pp) {
  return "virtual stage " + text(index) + " (stage " + text(index % pp) + ", chunk " +
         text(index / pp) + ")";
}

// Megatron-Core's --pipeline-model-parallel-layout: each virtual stage's transformer layers as
// the string lists them. The generator (llm_rank_generator.cpp) and the memory closed form
// (memory/llm_memory.cpp) hold the embedding on the first virtual stage and the MTP block, the
// LM head and the loss on the last, so a layout that puts them elsewhere is refused.
Split from_layout(const TransformerConfig& model, const ParallelConfig& parallel) {
  const int p = parallel.pp, v = parallel.virtual_stages;
  if (!parallel.pp_layers.empty() || parallel.first_stage_layers > 0 ||
      parallel.last_stage_layers > 0 || parallel.account_for_embedding || parallel.account_for_loss)
    return failed("pp_layout",
                  "gives every virtual stage's layers: no pp_layers, first/last-stage layers or "
                  "embedding/loss accounting beside it (Megatron-Core's get_num_layers_to_build "
                  "reads the layout alone, ignoring them)");
  std::vector<LayoutStage> stages;
  try {
    stages = parse_pipeline_layout(parallel.pp_layout, "", "");
  } catch (const InputError& error) {
    return failed("pp_layout", "\"" + parallel.pp_layout + "\" " + error.problem());
  }
  const int count = static_cast<int>(stages.size());
  if (count != p * v)
    return failed(
        "pp_layout",
        "has " + text(count) + " virtual stages ('|' separates them), PP x virtual stages is " +
            text(p * v) +
            (count % p == 0 ? " (virtual stages " + text(count / p) + " would match)" : ""));
  Split split;
  int mtp = 0;
  for (int index = 0; index < count; ++index) {
    const LayoutStage& stage = stages[static_cast<std::size_t>(index)];
    split.layers.push_back(stage.decoder);
    mtp += stage.mtp;
    if (stage.embedding > 0 && index != 0)
      return failed("pp_layout", "the embedding 'E' at character " +
                                     text(stage.embedding_position) + " is on " +
                                     virtual_stage_name(index, p) +
                                     ": perfsim holds it on the first virtual stage");
    if (stage.mtp > 0 && index != count - 1)
      return failed("pp_layout",
                    "the MTP layer 'm' at character " + text(stage.mtp_position) + " is on " +
                        virtual_stage_name(index, p) +
                        ": perfsim models the MTP block on the last virtual stage, with the "
                        "LM head and the loss (Megatron's standalone MTP is not modelled)");
    if (stage.loss > 0 && index != count - 1)
      return failed("pp_layout", "the loss 'L' at character " + text(stage.loss_position) +
                                     " is on " + virtual_stage_name(index, p) +
                                     ": perfsim holds it on the last virtual stage");
  }
  const long decoders = std::accumulate(split.layers.begin(), split.layers.end(), 0L);
  if (decoders != model.layers)
    return failed("pp_layout", "holds " + text(decoders) +
                                   " transformer layers 't', the model has " + text(model.layers));
  if (mtp != model.mtp_num_layers)
    return failed("pp_layout", "holds " + text(mtp) + " MTP layers 'm', the model has " +
                                   text(model.mtp_num_layers));
  // A stage of the embedding or the loss alone runs as a stage whose accounted layer left it
  // none (the generator's chunks may be empty); a middle stage with nothing is refused.
  for (int stage = 1; stage + 1 < p; ++stage) {
    int stage_total = 0;
    for (int chunk = 0; chunk < v; ++chunk)
      stage_total += split.layers[static_cast<std::size_t>(chunk * p + stage)];
    if (stage_total == 0)
      return failed("pp_layout", "stage " + text(stage) +
                                     " holds no transformer layer 't' on any of its virtual "
                                     "stages, nor the embedding or the loss; perfsim needs one");
  }
  return split;
}

// Megatron-Core's --decoder-first/last-pipeline-num-layers.
Split first_and_last(const TransformerConfig& model, const ParallelConfig& parallel) {
  const int p = parallel.pp, v = parallel.virtual_stages;
  const int first = parallel.first_stage_layers, last = parallel.last_stage_layers;
  if (first < 0 || last < 0)
    return failed("first_stage_layers", "first/last-stage layers must be positive");
  if (parallel.account_for_embedding || parallel.account_for_loss)
    return failed("first_stage_layers",
                  "first/last-stage layers and embedding/loss accounting exclude each other "
                  "(Megatron-Core applies one or the other)");
  if (p < 2)
    return failed("first_stage_layers", "first/last-stage layers need at least two stages");
  const int middle_stages = p - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const int middle_layers = model.layers - first - last;
  if (middle_stages == 0 && middle_layers != 0)
    return failed("first_stage_layers", "the first and last stages hold " + text(first + last) +
                                            " layers, the model has " + text(model.layers));
  if (middle_stages > 0 && (middle_layers <= 0 || middle_layers % middle_stages != 0))
    return failed("first_stage_layers",
                  "the " + text(middle_layers) + " layers left for the " + text(middle_stages) +
                      " middle stages do not split evenly, at least one each");
  std::vector<int> stages(static_cast<std::size_t>(p),
                          middle_stages > 0 ? middle_layers / middle_stages : 0);
  if (first > 0)
    stages.front() = first;
  if (last > 0)
    stages.back() = last;
  return chunks_of_stages(stages, v, "first_stage_layers");
}

Split split_layers(const TransformerConfig& model, const ParallelConfig& parallel) {
  if (!parallel.pp_layout.empty())
    return from_layout(model, parallel);
  if (!parallel.pp_layers.empty())
    return from_list(model, parallel);
  if (parallel.first_stage_layers != 0 || parallel.last_stage_layers != 0)
    return first_and_last(model, parallel);
  const int virtual_stages = parallel.pp * parallel.virtual_stages;
  const int embedding = parallel.account_for_embedding ? 1 : 0;
  const int loss = parallel.account_for_loss ? 1 : 0;
  const long counted = model.layers + embedding + loss;
  if (counted % virtual_stages != 0) {
    // Where a layer count does not divide, the options of an uneven split follow the message.
    const std::string options =
        "; an uneven split is given by pp_layers (--pp-layers), pp_layout (--pp-layout, "
        "Megatron's --pipeline-model-parallel-layout), first_stage_layers/last_stage_layers "
        "(--first-stage-layers/--last-stage-layers) or account_for_embedding/account_for_loss "
        "(--account-for-embedding/loss-in-pipeline-split)";
    if (embedding + loss == 0)  // the message of the even split, as before
      return failed("pp", "layers " + text(model.layers) + " is not divisible by " +
                              text(virtual_stages) + options);
    return failed("pp", "layers " + text(model.layers) + " + " + text(embedding + loss) +
                            " (embedding/loss counted as layers) = " + text(counted) +
                            " is not divisible by PP x virtual stages " + text(virtual_stages) +
                            options);
  }
  const int per_chunk = static_cast<int>(counted / virtual_stages);
  Split split;
  split.layers.assign(static_cast<std::size_t>(virtual_stages), per_chunk);
  split.layers.front() -= embedding;
  split.layers.back() -= loss;
  if (split.layers.front() < 0 || split.layers.back() < 0)
    return failed("pp", "not enough layers for the embedding and the loss to count as layers");
  return split;
}

}  // namespace

std::vector<int> virtual_stage_layers(const TransformerConfig& model,
                                      const ParallelConfig& parallel) {
  Split split = split_layers(model, parallel);
  if (!split.problem.empty())
    throw InputError("<parallel>", split.field, split.problem);
  return std::move(split.layers);
}

std::string pipeline_split_problem(const TransformerConfig& model, const ParallelConfig& parallel) {
  return split_layers(model, parallel).problem;
}

}  // namespace perfsim::generators::llm
