#pragma once
// The ranks of a job as a grid with one axis per parallel dimension, laid out in a RankOrder as
// Megatron-Core's RankGenerator lays them: rank = sum of coordinate x stride over the
// dimensions, a dimension's stride the product of the sizes before it in the order. Megatron
// builds two grids over the same ranks: the attention (dense) layers' with TP, CP, DP and PP,
// and the expert layers' with ETP (expert tensor parallel, TP by default), EP, expert DP
// (TP x CP x DP / (ETP x EP)) and PP. A process group is the ranks that differ from a rank only in
// the dimensions the group spans; its index among the groups of its kind is the rank's other
// coordinates read as one number in the same order (the order Megatron creates them in).
#include <array>
#include <initializer_list>
#include <vector>

#include "generators/llm/llm_parallel_config.hpp"
#include "generators/llm/llm_rank_order.hpp"

namespace perfsim::generators::llm {

class RankMesh {
 public:
  using Extents = std::array<int, kParallelDimensions>;  // indexed by ParallelDimension
  using Dimensions = std::initializer_list<ParallelDimension>;

  // Dimensions missing from `order` are appended, as Megatron does (validate() has checked
  // that they have size 1).
  RankMesh(const RankOrder& order, const Extents& sizes);

  int size(ParallelDimension dimension) const { return sizes_[index(dimension)]; }
  int stride(ParallelDimension dimension) const { return strides_[index(dimension)]; }
  const RankOrder& order() const { return order_; }

  Extents coordinates(int rank) const;
  int rank(const Extents& coordinates) const;
  // Of the group of `rank` that spans `spanned`: its index among the groups of its kind, and
  // its members in ascending order.
  int group_index(int rank, Dimensions spanned) const;
  std::vector<int> group_ranks(int rank, Dimensions spanned) const;

  static std::size_t index(ParallelDimension dimension) {
    return static_cast<std::size_t>(dimension);
  }

 private:
  RankOrder order_;
  Extents sizes_{};
  Extents strides_{};
};

// The attention layers' grid (EP 1) and the expert layers' grid (TP = ETP, CP 1, DP = expert
// DP).
RankMesh attention_mesh(const ParallelConfig& parallel);
RankMesh expert_mesh(const ParallelConfig& parallel);

// Whether two layouts of the same sizes put every group on the same ranks although their orders
// differ (tp-pp-dp and tp-dp-pp with PP 1, say): each dimension of size > 1 has the same stride
// in both grids.
bool same_rank_placement(const ParallelConfig& a, const ParallelConfig& b);

}  // namespace perfsim::generators::llm
