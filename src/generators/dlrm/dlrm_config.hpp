#pragma once
// A DLRM training job as the DLRM generator sees it (seed 001 Sec. III/V-B1): bottom MLP over
// the dense features, embedding tables (E rows of D elements, L lookups pooled per sample),
// dot interaction, top MLP; tables are model parallel, MLPs data parallel over `ranks` GPUs.
// Read from configs/dlrm/*.json ("perfsim-dlrm/1"). Tables are listed, or sampled from a
// distribution of pooling factors like seed 001 Fig. 3 (see dlrm_table_sampler.hpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "generators/dlrm/dlrm_table_sampler.hpp"
#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim::generators::dlrm {

struct DlrmConfig {
  std::string name;
  std::string source;  // where the shapes come from (provenance text)
  std::string file;    // the file it was read from (for error messages)
  int dense_features = 0;
  std::vector<std::int64_t> bottom_mlp;  // layer widths; the last equals the embedding dim
  std::vector<EmbeddingTable> tables;
  // How the tables were sampled, when they were (so an override can resample them).
  std::optional<TableSamplerSpec> table_generator;
  std::vector<std::int64_t> top_mlp;  // layer widths after the interaction; the last is 1
  int batch_per_gpu = 0;              // local batch B; the global batch is B x ranks
  DType dtype = DType::kFloat32;      // weights, activations and gradients
  int ranks = 0;
  // DDP gradient bucket: PyTorch's bucket_cap_mb = 25, in MiB as PyTorch counts it.
  Bytes bucket_bytes = 25 * 1024 * 1024;
  Bytes memory_cap_bytes = 0;  // embedding bytes allowed per rank; 0 = no cap
  // Sparse features are sent to the ranks that own their tables (an all-to-allv of indices)
  // before the lookup, as TorchRec's input distribution does.
  bool distribute_indices = true;
  std::uint64_t seed = 0;  // for the random sharder (and the table sampler)

  std::int64_t embedding_dim() const { return bottom_mlp.empty() ? 0 : bottom_mlp.back(); }
  // Features entering the dot interaction: the bottom MLP output plus one per table.
  std::int64_t interaction_features() const { return static_cast<std::int64_t>(tables.size()) + 1; }
  // Pairwise dot products (no self-interaction) plus the bottom MLP output (DLRM default).
  std::int64_t top_mlp_input() const {
    const std::int64_t f = interaction_features();
    return embedding_dim() + f * (f - 1) / 2;
  }
  int global_batch() const { return batch_per_gpu * ranks; }
};

// Bytes of one table's weights (what the sharders' memory cap counts).
Bytes table_bytes(const EmbeddingTable& table, DType dtype);

// Lookups of one table in a batch of `batch` samples: round(batch x L).
std::int64_t table_lookups(const EmbeddingTable& table, std::int64_t batch);

// Command-line replacements of a config's main fields (0 / nullopt: keep the file's).
struct DlrmOverrides {
  int batch_per_gpu = 0;
  int ranks = 0;
  // Sampled tables are resampled with this count; listed tables are cut to the first N, or
  // repeated in order (renamed "<name>~k") to make N.
  int tables = 0;
  std::optional<std::uint64_t> seed;  // random sharder and table sampler
  std::optional<double> memory_cap_GB;
};
DlrmConfig apply_overrides(DlrmConfig config, const DlrmOverrides& overrides);

// Throws InputError naming the file, the JSON pointer and the problem.
DlrmConfig parse_dlrm_config(std::string_view json_text, const std::string& file);
DlrmConfig load_dlrm_config(const std::string& path);
// Consistency of a config built or edited in code (CLI overrides): widths, dims, ranks.
void validate(const DlrmConfig& config, const std::string& file);

}  // namespace perfsim::generators::dlrm
