#include "generators/llm/llm_rank_mesh.hpp"

#include <algorithm>

namespace perfsim::generators::llm {
namespace {

bool spans(RankMesh::Dimensions spanned, ParallelDimension dimension) {
  return std::find(spanned.begin(), spanned.end(), dimension) != spanned.end();
}

}  // namespace

RankMesh::RankMesh(const RankOrder& order, const Extents& sizes) : order_(order), sizes_(sizes) {
  for (ParallelDimension dimension : default_rank_order())
    if (std::find(order_.begin(), order_.end(), dimension) == order_.end())
      order_.push_back(dimension);
  int stride = 1;
  for (ParallelDimension dimension : order_) {
    strides_[index(dimension)] = stride;
    stride *= sizes_[index(dimension)];
  }
}

RankMesh::Extents RankMesh::coordinates(int rank) const {
  Extents coordinates{};
  for (ParallelDimension dimension : order_) {
    const std::size_t i = index(dimension);
    coordinates[i] = rank / strides_[i] % sizes_[i];
  }
  return coordinates;
}

int RankMesh::rank(const Extents& coordinates) const {
  int rank = 0;
  for (std::size_t i = 0; i < coordinates.size(); ++i)
    rank += coordinates[i] * strides_[i];
  return rank;
}

int RankMesh::group_index(int rank, Dimensions spanned) const {
  const Extents c = coordinates(rank);
  int group = 0;
  int place = 1;
  for (ParallelDimension dimension : order_) {
    if (spans(spanned, dimension))
      continue;
    group += c[index(dimension)] * place;
    place *= size(dimension);
  }
  return group;
}

std::vector<int> RankMesh::group_ranks(int rank, Dimensions spanned) const {
  Extents first = coordinates(rank);
  for (ParallelDimension dimension : spanned)
    first[index(dimension)] = 0;
  std::vector<int> ranks{this->rank(first)};
  for (ParallelDimension dimension : spanned) {
    const std::size_t members = ranks.size();
    for (int step = 1; step < size(dimension); ++step)
      for (std::size_t i = 0; i < members; ++i)
        ranks.push_back(ranks[i] + step * stride(dimension));
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

RankMesh attention_mesh(const ParallelConfig& parallel) {
  RankMesh::Extents sizes{};
  sizes[RankMesh::index(ParallelDimension::kTensor)] = parallel.tp;
  sizes[RankMesh::index(ParallelDimension::kContext)] = parallel.cp;
  sizes[RankMesh::index(ParallelDimension::kExpert)] = 1;
  sizes[RankMesh::index(ParallelDimension::kData)] = parallel.dp;
  sizes[RankMesh::index(ParallelDimension::kPipeline)] = parallel.pp;
  return RankMesh(parallel.order, sizes);
}

RankMesh expert_mesh(const ParallelConfig& parallel) {
  RankMesh::Extents sizes{};
  sizes[RankMesh::index(ParallelDimension::kTensor)] = parallel.expert_tp();
  sizes[RankMesh::index(ParallelDimension::kContext)] = 1;
  sizes[RankMesh::index(ParallelDimension::kExpert)] = std::max(1, parallel.ep);
  sizes[RankMesh::index(ParallelDimension::kData)] = parallel.expert_gradient_group_size();
  sizes[RankMesh::index(ParallelDimension::kPipeline)] = parallel.pp;
  return RankMesh(parallel.order, sizes);
}

bool same_rank_placement(const ParallelConfig& a, const ParallelConfig& b) {
  auto same = [](const RankMesh& x, const RankMesh& y) {
    for (ParallelDimension dimension : default_rank_order())
      if (x.size(dimension) != y.size(dimension) ||
          (x.size(dimension) > 1 && x.stride(dimension) != y.stride(dimension)))
        return false;
    return true;
  };
  return same(attention_mesh(a), attention_mesh(b)) && same(expert_mesh(a), expert_mesh(b));
}

}  // namespace perfsim::generators::llm
