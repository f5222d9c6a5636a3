#include "generators/llm/llm_combined_step.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <variant>

#include "generators/llm/llm_delayed_wgrad.hpp"
#include "generators/llm/llm_trace_builder.hpp"

namespace perfsim::generators::llm {
namespace {

constexpr double kBytesPerUsPerGBps = 1e3;

// A step's ops cut at its EP all-to-alls: pieces[i] precedes all_to_alls[i]; one more piece
// than all-to-alls (possibly empty). An all-to-all of the routing probabilities (one value per
// row, 1-D) right after the tokens' joins their posting: Megatron-Core's dispatch node sends
// both, so the other micro-batch's piece runs beside the two.
struct Pieces {
  std::vector<std::vector<Op>> pieces;
  std::vector<std::vector<Op>> all_to_alls;
};

bool is_probabilities_all_to_all(const Op& op) {
  return !op.inputs.empty() && op.inputs.front().shape.size() == 1;
}

Pieces cut(std::vector<Op>::iterator begin, std::vector<Op>::iterator end) {
  Pieces out;
  out.pieces.emplace_back();
  for (auto it = begin; it != end; ++it) {
    if (is_expert_all_to_all(*it)) {
      if (is_probabilities_all_to_all(*it) && !out.all_to_alls.empty() &&
          out.pieces.back().empty()) {
        out.all_to_alls.back().push_back(std::move(*it));
        continue;
      }
      out.all_to_alls.emplace_back();
      out.all_to_alls.back().push_back(std::move(*it));
      out.pieces.emplace_back();
    } else {
      out.pieces.back().push_back(std::move(*it));
    }
  }
  return out;
}

// A gradient bucket's collective (dense or expert data-parallel stream) or a device
// synchronize: weight gradients emitted before it must stay before it.
bool waits_for_weight_gradients(const Op& op) {
  if (op.comm && !op.kernels.empty())
    return op.kernels.front().stream == kDataParallelStream ||
           op.kernels.front().stream == kExpertDataParallelStream;
  return std::any_of(op.runtime_calls.begin(), op.runtime_calls.end(),
                     [](const RuntimeCall& call) { return call.name == "cudaDeviceSynchronize"; });
}

bool is_compute(const Op& op) {
  return !op.is_annotation && !op.comm && !op.kernels.empty() &&
         op.kernels.front().category != KernelCategory::kCommunication;
}

// Raises the op's contention attribute `name` to at least `value`.
template <typename T>
void raise_attribute(Op& op, const char* name, T value) {
  for (Attribute& attribute : op.attributes) {
    if (attribute.name != name)
      continue;
    if (const T* current = std::get_if<T>(&attribute.value); current && *current >= value)
      return;
    attribute.value = value;
    return;
  }
  op.attributes.push_back({name, value});
}

double flops_of(const Op& op) {
  const Attribute* flops = op.find_attribute("flops");
  if (flops == nullptr)
    return 0;
  if (const double* value = std::get_if<double>(&flops->value))
    return *value;
  if (const std::int64_t* value = std::get_if<std::int64_t>(&flops->value))
    return static_cast<double>(*value);
  return 0;
}

Bytes bytes_of(const Op& op) {
  Bytes bytes = 0;
  for (const std::vector<TensorRef>* tensors : {&op.inputs, &op.outputs})
    for (const TensorRef& tensor : *tensors)
      bytes += tensor.bytes();
  return bytes;
}

// Marks the compute ops of `piece` that start within `window_us` of its start, each op's
// estimated time a roofline of its FLOPs and bytes; the op the window ends in with the share
// it overlaps. window_us < 0: every compute op, whole.
std::size_t mark_beside(std::vector<Op>& piece, const AllToAllContention& beside,
                        double window_us) {
  constexpr double kFlopsPerUsPerTFLOPs = 1e6;
  std::size_t marked = 0;
  double elapsed_us = 0;
  for (Op& op : piece) {
    if (!is_compute(op))
      continue;
    if (window_us >= 0 && elapsed_us >= window_us)
      break;
    double share = 1;
    if (window_us >= 0) {
      const double op_us = std::max(
          flops_of(op) / (beside.gemm_TFLOPs * kFlopsPerUsPerTFLOPs),
          static_cast<double>(bytes_of(op)) / (beside.device_hbm_GBps * kBytesPerUsPerGBps));
      if (op_us > 0)
        share = std::min(1.0, (window_us - elapsed_us) / op_us);
      elapsed_us += op_us;
    }
    if (beside.sms > 0)
      raise_attribute(op, "contention_sms",
                      static_cast<std::int64_t>(std::ceil(share * beside.sms)));
    if (beside.hbm_GBps > 0)
      raise_attribute(op, "contention_hbm_GBps", share * beside.hbm_GBps);
    ++marked;
  }
  return marked;
}

}  // namespace

double all_to_all_estimate_us(const Op& all_to_all, double bus_GBps) {
  if (!all_to_all.comm || bus_GBps <= 0)
    return 0;
  const CommInfo& comm = *all_to_all.comm;
  const double n = std::max(1, comm.group_size);
  const double bytes = static_cast<double>(std::max(comm.bytes_in, comm.bytes_out));
  return bytes * (n - 1) / n / (bus_GBps * kBytesPerUsPerGBps);
}

bool is_expert_all_to_all(const Op& op) {
  return op.comm &&
         (op.comm->kind == CollectiveKind::kAllToAllv ||
          op.comm->kind == CollectiveKind::kAllToAll ||
          op.comm->kind == CollectiveKind::kHierarchicalAllToAll) &&
         !op.kernels.empty() && op.kernels.front().stream == kExpertParallelStream;
}

std::size_t interleave_combined_step(std::vector<Op>& ops, std::size_t forward_begin,
                                     std::size_t backward_begin, const AllToAllContention& beside) {
  const auto first = ops.begin() + static_cast<std::ptrdiff_t>(forward_begin);
  const auto middle = ops.begin() + static_cast<std::ptrdiff_t>(backward_begin);
  std::vector<std::int64_t> ids;
  ids.reserve(ops.size() - forward_begin);
  for (auto it = first; it != ops.end(); ++it)
    ids.push_back(it->id);
  std::sort(ids.begin(), ids.end());
  Pieces forward = cut(first, middle);
  Pieces backward = cut(middle, ops.end());
  ops.erase(first, ops.end());

  std::size_t marked = 0;
  const bool estimated =
      beside.bus_GBps > 0 && beside.gemm_TFLOPs > 0 && beside.device_hbm_GBps > 0;
  // How long the all-to-all just posted is estimated to run; -1: mark the whole piece.
  auto window_of = [&](const Op& all_to_all) {
    return estimated ? all_to_all_estimate_us(all_to_all, beside.bus_GBps) : -1.0;
  };
  auto append = [&](std::vector<Op>& piece) {
    std::move(piece.begin(), piece.end(), std::back_inserter(ops));
  };
  // delay_wgrad_compute: the delayed weight-gradient ops of the backward piece just appended,
  // held back until the backward's next all-to-all is posted (Megatron's mlp_bwd_dw after
  // dispatch_bwd is queued, attn_bwd_dw before the next layer's combine_bwd runs); those of the
  // backward's last piece stay in it. Empty without the switch.
  std::vector<Op> delayed;
  // Backward piece `piece` without its delayed ops, which join `delayed` if an all-to-all of
  // the backward follows the piece.
  auto backward_piece = [&](std::size_t piece) {
    std::vector<Op> kept = std::move(backward.pieces[piece]);
    if (piece < backward.all_to_alls.size()) {
      // Only those after the piece's last gradient bucket or synchronize: the bucket reduces
      // the gradients written before it (Megatron's hook fires after backward_dw).
      auto movable = kept.begin();
      for (auto it = kept.begin(); it != kept.end(); ++it)
        if (waits_for_weight_gradients(*it))
          movable = std::next(it);
      const auto first_delayed = std::stable_partition(
          movable, kept.end(), [](const Op& op) { return !is_delayed_wgrad(op); });
      std::move(first_delayed, kept.end(), std::back_inserter(delayed));
      kept.erase(first_delayed, kept.end());
    }
    return kept;
  };
  // Backward piece 0 (the loss or the received gradient up to the first combine all-to-all)
  // runs before any all-to-all is in flight.
  {
    std::vector<Op> first = backward_piece(0);
    append(first);
  }
  // Posts `posting`'s all-to-all `a2a` (if it has one) and appends `running`'s piece `piece`
  // (if any), marked as beside that all-to-all when one was posted; after a backward
  // all-to-all the delayed weight gradients held back run first, then the forward's piece.
  auto post_then_run = [&](Pieces& posting, std::size_t a2a, Pieces& running, std::size_t piece) {
    const bool posted = a2a < posting.all_to_alls.size();
    double window_us = -1;
    if (posted) {
      window_us = 0;
      for (Op& all_to_all : posting.all_to_alls[a2a]) {
        const double one_us = window_of(all_to_all);
        window_us = one_us < 0 || window_us < 0 ? -1.0 : window_us + one_us;
        ops.push_back(std::move(all_to_all));
      }
    }
    std::vector<Op> run;
    if (&running == &forward) {
      run = std::move(delayed);
      delayed.clear();
      if (piece < forward.pieces.size())
        std::move(forward.pieces[piece].begin(), forward.pieces[piece].end(),
                  std::back_inserter(run));
    } else if (piece < backward.pieces.size()) {
      run = backward_piece(piece);
    }
    if (posted)
      marked += mark_beside(run, beside, window_us);
    append(run);
  };
  const std::size_t rounds = std::max(forward.all_to_alls.size(), backward.all_to_alls.size());
  for (std::size_t i = 0; i < rounds; ++i) {
    post_then_run(backward, i, forward, i);      // forward piece i beside backward all-to-all i
    post_then_run(forward, i, backward, i + 1);  // backward piece i + 1 beside forward's i
  }
  // What is left: the forward's last piece (after its last combine), or the rest of a side
  // with more layers.
  for (std::size_t i = rounds; i < forward.pieces.size(); ++i)
    append(forward.pieces[i]);
  for (std::size_t i = rounds + 1; i < backward.pieces.size(); ++i) {
    std::vector<Op> rest = backward_piece(i);
    append(rest);
  }

  for (std::size_t i = 0; i < ids.size(); ++i)
    ops[forward_begin + i].id = ids[i];
  return marked;
}

}  // namespace perfsim::generators::llm
