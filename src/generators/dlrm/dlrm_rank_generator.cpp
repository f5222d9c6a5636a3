#include "generators/dlrm/dlrm_rank_generator.hpp"

#include <algorithm>
#include <numeric>

#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::dlrm {
namespace {

using llm::CollectiveSpec;
using llm::RankTraceBuilder;

// PyTorch DDP's first bucket (_DEFAULT_FIRST_BUCKET_BYTES): small, so that the first
// all-reduce starts early in the backward pass.
constexpr Bytes kFirstBucketBytes = 1024 * 1024;
// Sparse indices and offsets: int32, as the fixture's TorchRec input all-to-all sends them.
constexpr DType kIndexDType = DType::kInt32;

struct Layer {
  TensorRef weight;  // [out, in]
  TensorRef bias;    // [out]
  TensorRef input;   // [B, in]
  TensorRef output;  // [B, out], after the activation
};

void check_plan(const DlrmConfig& config, const ShardingPlan& plan, int rank) {
  if (rank < 0 || rank >= config.ranks)
    throw InputError(config.file, "/ranks",
                     "rank " + std::to_string(rank) + " is outside the world of " +
                         std::to_string(config.ranks));
  if (plan.rank_of_table.size() != config.tables.size() ||
      plan.tables_of_rank.size() != static_cast<std::size_t>(config.ranks))
    throw InputError(config.file, "/tables",
                     "the sharding plan has " + std::to_string(plan.rank_of_table.size()) +
                         " tables on " + std::to_string(plan.tables_of_rank.size()) +
                         " ranks; the config has " + std::to_string(config.tables.size()) +
                         " tables on " + std::to_string(config.ranks) + " ranks");
}

std::int64_t lookups_of(const DlrmConfig& config, const std::vector<int>& tables,
                        std::int64_t batch) {
  std::int64_t total = 0;
  for (int t : tables)
    total += table_lookups(config.tables[t], batch);
  return total;
}

std::int64_t sum(const std::vector<std::int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), std::int64_t{0});
}

class DlrmRankGenerator {
 public:
  DlrmRankGenerator(const DlrmConfig& config, const ShardingPlan& plan, int rank)
      : config_(config),
        plan_(plan),
        rank_(rank),
        batch_(config.batch_per_gpu),
        global_batch_(config.global_batch()),
        dim_(config.embedding_dim()),
        local_tables_(plan.tables_of_rank[rank]),
        buckets_(ddp_buckets(config)),
        builder_(rank, config.ranks, config.dtype) {
    builder_.trace().format = "perfsim-dlrm-generator/1";
    builder_.trace().source = "<generated> dlrm " + config.name + " rank " + std::to_string(rank);
  }

  Trace generate() {
    builder_.set_phase("forward");
    const TensorRef indices = distribute_indices();
    const TensorRef bottom = bottom_mlp_forward();
    const TensorRef pooled = embedding_forward(indices);
    const TensorRef received = pooled_all_to_all(pooled, /*backward=*/false);
    const TensorRef top_input = interaction_forward(bottom, received);
    const TensorRef prediction = top_mlp_forward(top_input);
    const TensorRef loss_grad = loss(prediction);
    builder_.set_phase("backward");
    const TensorRef grad_top_input = mlp_backward(top_, loss_grad, /*first_step=*/0, true);
    const auto [grad_bottom, grad_embeddings] = interaction_backward(grad_top_input);
    const TensorRef grad_pooled = pooled_all_to_all(grad_embeddings, /*backward=*/true);
    mlp_backward(bottom_, grad_bottom, static_cast<int>(top_.size()), false);
    embedding_backward(indices, grad_pooled);
    builder_.set_phase("optimizer");
    optimizer();
    return builder_.take();
  }

 private:
  // The tensor of this rank's lookups over the global batch (received from its peers, or
  // read locally when indices are not distributed).
  TensorRef distribute_indices() {
    const std::int64_t local_lookups = lookups_of(config_, local_tables_, global_batch_);
    if (!config_.distribute_indices)
      return builder_.tensor({local_lookups}, kIndexDType);
    const AllToAllSplits splits = index_splits(config_, plan_, rank_);
    const TensorRef send = builder_.tensor({sum(splits.send_elements)}, kIndexDType);
    const TensorRef receive = builder_.tensor({sum(splits.receive_elements)}, kIndexDType);
    all_to_allv(send, receive, splits);
    return receive;
  }

  void all_to_allv(const TensorRef& send, const TensorRef& receive, const AllToAllSplits& splits) {
    builder_.communicate(
        CollectiveSpec{CollectiveKind::kAllToAllv, "", config_.ranks, -1, kAllToAllStream}, send,
        receive);
    Op& op = builder_.trace().ops.back();
    op.name = "nccl:all_to_all";  // the name PyTorch records for all-to-all and all-to-allv
    op.comm->in_split_elements = splits.send_elements;
    op.comm->out_split_elements = splits.receive_elements;
  }

  // addmm + activation for each width; the last layer of the top MLP ends in a sigmoid.
  TensorRef mlp_forward(std::vector<Layer>& layers, TensorRef x,
                        const std::vector<std::int64_t>& widths, bool sigmoid_last,
                        int first_layer_id) {
    for (std::size_t i = 0; i < widths.size(); ++i) {
      builder_.set_layer(first_layer_id + static_cast<int>(i));
      const std::int64_t in = x.shape[1];
      const std::int64_t out = widths[i];
      Layer layer;
      layer.weight = builder_.tensor({out, in});
      layer.bias = builder_.tensor({out});
      layer.input = x;
      const TensorRef linear = builder_.tensor({batch_, out});
      builder_.compute("aten::addmm",
                       {layer.bias, x, RankTraceBuilder::view(layer.weight, {in, out})}, {linear},
                       KernelCategory::kGemm, 2.0 * batch_ * in * out);
      layer.output = builder_.tensor({batch_, out});
      const bool sigmoid = sigmoid_last && i + 1 == widths.size();
      builder_.compute(sigmoid ? "aten::sigmoid" : "aten::relu", {linear}, {layer.output},
                       KernelCategory::kOther, static_cast<double>(batch_ * out));
      layers.push_back(layer);
      x = layer.output;
    }
    builder_.set_layer(-1);
    return x;
  }

  TensorRef bottom_mlp_forward() {
    const TensorRef dense = builder_.tensor({batch_, config_.dense_features});
    return mlp_forward(bottom_, dense, config_.bottom_mlp, false, 0);
  }

  TensorRef top_mlp_forward(const TensorRef& input) {
    return mlp_forward(top_, input, config_.top_mlp, true,
                       static_cast<int>(config_.bottom_mlp.size()));
  }

  // One embedding_bag per local table over the global batch; their outputs side by side.
  TensorRef embedding_forward(const TensorRef& indices) {
    const auto local = static_cast<std::int64_t>(local_tables_.size());
    offsets_ = builder_.tensor({global_batch_ + 1}, kIndexDType);
    std::vector<TensorRef> pooled;
    for (int t : local_tables_) {
      const EmbeddingTable& table = config_.tables[t];
      weights_.push_back(builder_.tensor({table.rows, table.dim}));
      const std::int64_t lookups = table_lookups(table, global_batch_);
      pooled.push_back(builder_.tensor({global_batch_, dim_}));
      builder_.compute("aten::embedding_bag",
                       {weights_.back(), RankTraceBuilder::view(indices, {lookups}), offsets_},
                       {pooled.back()}, KernelCategory::kEmbeddingLookup,
                       static_cast<double>(lookups * table.dim));
      builder_.trace().ops.back().attributes.push_back({"table", std::int64_t{t}});
    }
    if (pooled.size() == 1)
      return pooled.front();
    const TensorRef all = builder_.tensor({global_batch_, local * dim_});
    if (!pooled.empty())
      builder_.compute("aten::cat", pooled, {all}, KernelCategory::kMemory, 0);
    return all;
  }

  // Forward: [G, |T_r| D] out, [B, T D] in; backward the reverse.
  TensorRef pooled_all_to_all(const TensorRef& send, bool backward) {
    AllToAllSplits splits = pooled_embedding_splits(config_, plan_, rank_);
    if (backward)
      std::swap(splits.send_elements, splits.receive_elements);
    const auto tables = static_cast<std::int64_t>(config_.tables.size());
    const auto local = static_cast<std::int64_t>(local_tables_.size());
    const TensorRef receive = backward ? builder_.tensor({global_batch_, local * dim_})
                                       : builder_.tensor({batch_, tables * dim_});
    all_to_allv(send, receive, splits);
    return receive;
  }

  // DLRM's dot interaction: Z = T T^T over the F = tables + 1 features, the F(F-1)/2 pairs
  // below the diagonal gathered and appended to the bottom MLP output.
  TensorRef interaction_forward(const TensorRef& bottom, const TensorRef& embeddings) {
    const std::int64_t features = config_.interaction_features();
    const std::int64_t pairs = features * (features - 1) / 2;
    features_ = builder_.tensor({batch_, features * dim_});
    builder_.compute("aten::cat", {bottom, embeddings}, {features_}, KernelCategory::kMemory, 0);
    const TensorRef t = RankTraceBuilder::view(features_, {batch_, features, dim_});
    scores_ = builder_.tensor({batch_, features, features});
    builder_.compute("aten::bmm", {t, RankTraceBuilder::view(t, {batch_, dim_, features})},
                     {scores_}, KernelCategory::kGemm, 2.0 * batch_ * features * features * dim_);
    const TensorRef pairs_out = builder_.tensor({batch_, pairs});
    builder_.compute("aten::copy_", {pairs_out, scores_}, {pairs_out}, KernelCategory::kMemory, 0);
    const TensorRef top_input = builder_.tensor({batch_, dim_ + pairs});
    builder_.compute("aten::cat", {bottom, pairs_out}, {top_input}, KernelCategory::kMemory, 0);
    return top_input;
  }

  // MSE loss (DLRM's default): (p - y)^2 averaged; returns dLoss/dp.
  TensorRef loss(const TensorRef& prediction) {
    const TensorRef target = builder_.tensor({batch_, 1});
    const TensorRef diff = builder_.tensor({batch_, 1});
    builder_.compute("aten::sub", {prediction, target}, {diff}, KernelCategory::kOther,
                     static_cast<double>(batch_));
    const TensorRef squared = builder_.tensor({batch_, 1});
    builder_.compute("aten::mul", {diff, diff}, {squared}, KernelCategory::kOther,
                     static_cast<double>(batch_));
    const TensorRef value = builder_.tensor({1});
    builder_.compute("aten::mean", {squared}, {value}, KernelCategory::kOther,
                     static_cast<double>(batch_));
    builder_.set_phase("backward");
    const TensorRef grad = builder_.tensor({batch_, 1});
    builder_.compute("aten::mul", {diff}, {grad}, KernelCategory::kOther,
                     static_cast<double>(batch_));
    return grad;
  }

  // Layers in reverse: activation backward, grad input (skipped for the bottom MLP's first
  // layer: the dense features need none), grad weight, grad bias; buckets whose gradients
  // are all ready are all-reduced. Returns the gradient of the MLP input.
  TensorRef mlp_backward(const std::vector<Layer>& layers, TensorRef grad, int first_step,
                         bool top) {
    const int first_layer_id = top ? static_cast<int>(config_.bottom_mlp.size()) : 0;
    for (std::size_t back = 0; back < layers.size(); ++back) {
      const std::size_t i = layers.size() - 1 - back;
      const Layer& layer = layers[i];
      builder_.set_layer(first_layer_id + static_cast<int>(i));
      const std::int64_t out = layer.weight.shape[0];
      const std::int64_t in = layer.weight.shape[1];
      const TensorRef grad_linear = builder_.tensor({batch_, out});
      const bool sigmoid = top && i + 1 == layers.size();
      builder_.compute(sigmoid ? "aten::sigmoid_backward" : "aten::threshold_backward",
                       {grad, layer.output}, {grad_linear}, KernelCategory::kOther,
                       static_cast<double>(batch_ * out));
      if (top || i > 0) {
        grad = builder_.tensor({batch_, in});
        builder_.compute("aten::mm", {grad_linear, layer.weight}, {grad}, KernelCategory::kGemm,
                         2.0 * batch_ * in * out);
      }
      const TensorRef grad_weight = builder_.tensor({out, in});
      builder_.compute("aten::mm",
                       {RankTraceBuilder::view(grad_linear, {out, batch_}), layer.input},
                       {grad_weight}, KernelCategory::kGemm, 2.0 * batch_ * in * out);
      const TensorRef grad_bias = builder_.tensor({out});
      builder_.compute("aten::sum", {grad_linear}, {grad_bias}, KernelCategory::kOther,
                       static_cast<double>(batch_ * out));
      reduce_ready_buckets(first_step + static_cast<int>(back));
    }
    builder_.set_layer(-1);
    return grad;
  }

  void reduce_ready_buckets(int step) {
    while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].ready_after_step <= step) {
      const TensorRef buffer = builder_.tensor({buckets_[next_bucket_].elements}, config_.dtype);
      builder_.communicate(
          CollectiveSpec{CollectiveKind::kAllReduce, "", config_.ranks, -1, kAllReduceStream},
          buffer, buffer);
      bucket_buffers_.push_back(buffer);
      ++next_bucket_;
    }
  }

  // Gradients of the interaction: back through the gather and both operands of the bmm,
  // split into the bottom MLP's part and the embeddings' part.
  std::pair<TensorRef, TensorRef> interaction_backward(const TensorRef& grad_top_input) {
    const std::int64_t features = config_.interaction_features();
    const std::int64_t pairs = features * (features - 1) / 2;
    const auto tables = static_cast<std::int64_t>(config_.tables.size());
    const TensorRef grad_scores = builder_.tensor({batch_, features, features});
    builder_.compute("aten::copy_",
                     {grad_scores, RankTraceBuilder::view(grad_top_input, {batch_, pairs})},
                     {grad_scores}, KernelCategory::kMemory, 0);
    const TensorRef t = RankTraceBuilder::view(features_, {batch_, features, dim_});
    const TensorRef grad_a = builder_.tensor({batch_, features, dim_});
    builder_.compute("aten::bmm", {grad_scores, t}, {grad_a}, KernelCategory::kGemm,
                     2.0 * batch_ * features * features * dim_);
    const TensorRef grad_b = builder_.tensor({batch_, features, dim_});
    builder_.compute("aten::bmm", {grad_scores, t}, {grad_b}, KernelCategory::kGemm,
                     2.0 * batch_ * features * features * dim_);
    const TensorRef grad_t = builder_.tensor({batch_, features, dim_});
    builder_.compute("aten::add", {grad_a, grad_b}, {grad_t}, KernelCategory::kOther,
                     static_cast<double>(batch_ * features * dim_));
    const TensorRef grad_bottom = builder_.tensor({batch_, dim_});
    builder_.compute("aten::add",
                     {RankTraceBuilder::view(grad_top_input, {batch_, dim_}),
                      RankTraceBuilder::view(grad_t, {batch_, dim_})},
                     {grad_bottom}, KernelCategory::kOther, static_cast<double>(batch_ * dim_));
    const TensorRef grad_embeddings = builder_.tensor({batch_, tables * dim_});
    builder_.compute("aten::clone", {RankTraceBuilder::view(grad_t, {batch_, tables * dim_})},
                     {grad_embeddings}, KernelCategory::kMemory, 0);
    return {grad_bottom, grad_embeddings};
  }

  void embedding_backward(const TensorRef& indices, const TensorRef& grad_pooled) {
    for (std::size_t i = 0; i < local_tables_.size(); ++i) {
      const int t = local_tables_[i];
      const EmbeddingTable& table = config_.tables[t];
      const std::int64_t lookups = table_lookups(table, global_batch_);
      builder_.compute("aten::_embedding_bag_backward",
                       {RankTraceBuilder::view(grad_pooled, {global_batch_, dim_}),
                        RankTraceBuilder::view(indices, {lookups}), offsets_},
                       {RankTraceBuilder::view(weights_[i], {table.rows, table.dim})},
                       KernelCategory::kEmbeddingLookup, static_cast<double>(lookups * table.dim));
      builder_.trace().ops.back().attributes.push_back({"table", std::int64_t{t}});
    }
  }

  // SGD on the replicated MLP parameters, one fused update per bucket once it is reduced.
  void optimizer() {
    reduce_ready_buckets(static_cast<int>(top_.size() + bottom_.size()));
    for (const TensorRef& buffer : bucket_buffers_) {
      const TensorRef parameters = builder_.tensor(buffer.shape, config_.dtype);
      builder_.compute("aten::add_", {parameters, buffer}, {parameters}, KernelCategory::kOther,
                       static_cast<double>(buffer.numel));
    }
  }

  const DlrmConfig& config_;
  const ShardingPlan& plan_;
  int rank_;
  std::int64_t batch_;
  std::int64_t global_batch_;
  std::int64_t dim_;
  const std::vector<int>& local_tables_;
  std::vector<GradientBucket> buckets_;
  RankTraceBuilder builder_;
  std::vector<Layer> bottom_;
  std::vector<Layer> top_;
  std::vector<TensorRef> weights_;  // local tables, in local_tables_ order
  TensorRef offsets_;
  TensorRef features_;
  TensorRef scores_;
  std::size_t next_bucket_ = 0;
  std::vector<TensorRef> bucket_buffers_;
};

}  // namespace

AllToAllSplits pooled_embedding_splits(const DlrmConfig& config, const ShardingPlan& plan,
                                       int rank) {
  AllToAllSplits splits;
  const std::int64_t per_sample = config.batch_per_gpu * config.embedding_dim();
  const auto local = static_cast<std::int64_t>(plan.tables_of_rank[rank].size());
  for (int peer = 0; peer < config.ranks; ++peer) {
    splits.send_elements.push_back(per_sample * local);
    splits.receive_elements.push_back(per_sample *
                                      static_cast<std::int64_t>(plan.tables_of_rank[peer].size()));
  }
  return splits;
}

AllToAllSplits index_splits(const DlrmConfig& config, const ShardingPlan& plan, int rank) {
  AllToAllSplits splits;
  const std::int64_t own = lookups_of(config, plan.tables_of_rank[rank], config.batch_per_gpu);
  for (int peer = 0; peer < config.ranks; ++peer) {
    splits.send_elements.push_back(
        lookups_of(config, plan.tables_of_rank[peer], config.batch_per_gpu));
    splits.receive_elements.push_back(own);
  }
  return splits;
}

std::vector<GradientBucket> ddp_buckets(const DlrmConfig& config) {
  // Parameters in reverse registration order (bottom MLP then top MLP are registered): the top
  // MLP's last bias first. Backward step s = the s-th MLP layer to finish its backward.
  struct Parameter {
    std::int64_t elements;
    int step;
  };
  std::vector<Parameter> reversed;
  std::vector<std::int64_t> top_inputs{config.top_mlp_input()};
  std::vector<std::int64_t> bottom_inputs{config.dense_features};
  for (std::size_t i = 0; i + 1 < config.top_mlp.size(); ++i)
    top_inputs.push_back(config.top_mlp[i]);
  for (std::size_t i = 0; i + 1 < config.bottom_mlp.size(); ++i)
    bottom_inputs.push_back(config.bottom_mlp[i]);
  int step = 0;
  for (std::size_t i = config.top_mlp.size(); i-- > 0; ++step) {
    reversed.push_back({config.top_mlp[i], step});
    reversed.push_back({config.top_mlp[i] * top_inputs[i], step});
  }
  for (std::size_t i = config.bottom_mlp.size(); i-- > 0; ++step) {
    reversed.push_back({config.bottom_mlp[i], step});
    reversed.push_back({config.bottom_mlp[i] * bottom_inputs[i], step});
  }
  const int bytes_per_element = element_bytes(config.dtype);
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  for (const Parameter& parameter : reversed) {
    open.elements += parameter.elements;
    open.ready_after_step = parameter.step;
    const Bytes cap =
        buckets.empty() ? std::min(kFirstBucketBytes, config.bucket_bytes) : config.bucket_bytes;
    if (open.elements * bytes_per_element >= cap) {
      buckets.push_back(open);
      open = {};
    }
  }
  if (open.elements > 0)
    buckets.push_back(open);
  return buckets;
}

std::int64_t mlp_parameter_count(const DlrmConfig& config) {
  std::int64_t total = 0;
  for (const GradientBucket& bucket : ddp_buckets(config))
    total += bucket.elements;
  return total;
}

Trace generate_dlrm_rank(const DlrmConfig& config, const ShardingPlan& plan, int rank) {
  check_plan(config, plan, rank);
  return DlrmRankGenerator(config, plan, rank).generate();
}

}  // namespace perfsim::generators::dlrm
