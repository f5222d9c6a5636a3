#include "perfsim/trace.hpp"

#include <algorithm>
#include <array>
#include <span>

namespace perfsim {

std::string_view kernel_category_name(KernelCategory category) {
  switch (category) {
    case KernelCategory::kEmbeddingLookup:
      return "embedding_lookup";
    case KernelCategory::kGemm:
      return "gemm";
    case KernelCategory::kMemory:
      return "memory";
    case KernelCategory::kOther:
      return "other";
    case KernelCategory::kCommunication:
      return "communication";
  }
  return "other";
}

namespace {
bool contains_any(std::string_view haystack, std::span<const std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(), [&](std::string_view needle) {
    return haystack.find(needle) != std::string_view::npos;
  });
}
}  // namespace

KernelCategory classify_kernel(std::string_view name) {
  static constexpr std::array<std::string_view, 2> kComm{"nccl", "NCCL"};
  static constexpr std::array<std::string_view, 4> kEmbedding{"embedding", "Embedding",
                                                              "embedding_bag", "EmbeddingBag"};
  static constexpr std::array<std::string_view, 12> kGemm{
      "gemm",    "Gemm", "GEMM",  "gemv",       "sgemm",        "hgemm",
      "cutlass", "xmma", "nvjet", "dot_kernel", "splitKreduce", "_h884"};
  static constexpr std::array<std::string_view, 11> kMemory{
      "Memcpy",      "Memset",    "memcpy",    "memset",  "CatArrayBatchedCopy", "copy_kernel",
      "direct_copy", "transpose", "Transpose", "permute", "fill_kernel"};
  if (contains_any(name, kComm))
    return KernelCategory::kCommunication;
  if (contains_any(name, kEmbedding))
    return KernelCategory::kEmbeddingLookup;
  if (contains_any(name, kGemm))
    return KernelCategory::kGemm;
  if (contains_any(name, kMemory))
    return KernelCategory::kMemory;
  return KernelCategory::kOther;
}

bool is_blocking_runtime_call(std::string_view call_name) {
  return call_name == "cudaStreamSynchronize" || call_name == "cudaDeviceSynchronize" ||
         call_name == "cudaEventSynchronize";
}

const Attribute* Op::find_attribute(std::string_view attr_name) const {
  for (const Attribute& attribute : attributes) {
    if (attribute.name == attr_name)
      return &attribute;
  }
  return nullptr;
}

void Trace::reindex() const {
  index_.clear();
  index_.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i)
    index_.emplace(ops[i].id, i);
}

std::ptrdiff_t Trace::position_of(std::int64_t id) const {
  if (index_.size() != ops.size())
    reindex();
  auto it = index_.find(id);
  return it == index_.end() ? -1 : static_cast<std::ptrdiff_t>(it->second);
}

const Op* Trace::find(std::int64_t id) const {
  std::ptrdiff_t position = position_of(id);
  return position < 0 ? nullptr : &ops[static_cast<std::size_t>(position)];
}

std::vector<std::size_t> Trace::top_level_positions() const {
  std::vector<std::size_t> result;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.is_annotation)
      continue;
    bool under_working_op = false;
    // Bounded walk: a self-parented root (ET files write the root as its own parent) or a
    // parent cycle must not loop forever.
    std::size_t steps = 0;
    for (std::int64_t parent = op.parent_id; parent != kNoParent && steps++ < ops.size();) {
      const Op* ancestor = find(parent);
      if (ancestor == nullptr || ancestor == &op)
        break;
      if (!ancestor->is_annotation) {
        under_working_op = true;
        break;
      }
      parent = ancestor->parent_id;
    }
    if (!under_working_op)
      result.push_back(i);
  }
  return result;
}

std::vector<const Kernel*> Trace::kernels_under(std::size_t position) const {
  std::vector<const Kernel*> result;
  std::vector<std::size_t> stack{position};
  // Depth-first in child order keeps launch order: children run in order, and an op's own
  // launches are interleaved with its children by start time where recorded.
  bool all_timed = true;
  while (!stack.empty()) {
    std::size_t current = stack.back();
    stack.pop_back();
    const Op& op = ops[current];
    for (const Kernel& kernel : op.kernels) {
      result.push_back(&kernel);
      if (!kernel.measured_start_us)
        all_timed = false;
    }
    for (auto child = op.child_ids.rbegin(); child != op.child_ids.rend(); ++child) {
      std::ptrdiff_t child_position = position_of(*child);
      if (child_position >= 0)
        stack.push_back(static_cast<std::size_t>(child_position));
    }
  }
  if (all_timed) {
    // Launch order is correlation order (runtime calls are issued in that order).
    std::stable_sort(result.begin(), result.end(), [](const Kernel* a, const Kernel* b) {
      return a->correlation_id < b->correlation_id;
    });
  }
  return result;
}

}  // namespace perfsim
