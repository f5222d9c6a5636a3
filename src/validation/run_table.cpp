#include "validation/run_table.hpp"

#include "validation/framework_presets.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "generators/llm/llm_pipeline_layout.hpp"
#include "generators/llm/llm_recompute_modules.hpp"
#include "io/csv_table.hpp"
#include "io/input_file.hpp"
#include "perfsim/error.hpp"
#include "validation/framework_presets.hpp"

namespace perfsim::validation {
namespace {

const std::vector<std::string> kColumns = {"name",
                                           "group",
                                           "model",
                                           "layers",
                                           "hidden",
                                           "heads",
                                           "kv_heads",
                                           "head_dim",
                                           "ffn_hidden",
                                           "vocab",
                                           "seq_len",
                                           "attention",
                                           "dropout",
                                           "gated_ffn",
                                           "position_embedding",
                                           "tied_embeddings",
                                           "gpus",
                                           "tp",
                                           "pp",
                                           "dp",
                                           "cp",
                                           "ep",
                                           "etp",
                                           "order",
                                           "virtual_stages",
                                           "micro_batch",
                                           "global_batch",
                                           "recompute",
                                           "recompute_modules",
                                           "sequence_parallel",
                                           "dtype",
                                           "fp8_recipe",
                                           "fp8_param_gather",
                                           "distributed_optimizer",
                                           "zero",
                                           "grad_reduce_dtype",
                                           "moe_imbalance",
                                           "overlap_grad_reduce",
                                           "overlap_param_gather",
                                           "tp_comm_overlap",
                                           "overlap_p2p_comm",
                                           "p2p_scatter_gather",
                                           "moe_a2a_overlap",
                                           "delay_wgrad_compute",
                                           "moe_shared_expert_overlap",
                                           "moe_router_fusion",
                                           "moe_router_dtype",
                                           "moe_permute_fusion",
                                           "moe_router_force_load_balancing",
                                           "moe_expert_capacity_factor",
                                           "moe_pad_expert_input_to_capacity",
                                           "moe_grouped_gemm",
                                           "moe_token_dispatcher",
                                           "moe_flex_backend",
                                           "bias_swiglu_fusion",
                                           "rope_fusion",
                                           "cross_entropy_fusion",
                                           "get_batch_sync",
                                           "timer_syncs",
                                           "framework",
                                           "device",
                                           "topology",
                                           "nodes",
                                           "measured_iteration_s",
                                           "measured_tflops_per_gpu",
                                           "measured_tokens_per_s_per_gpu",
                                           "first_stage_layers",
                                           "last_stage_layers",
                                           "account_for_embedding",
                                           "account_for_loss",
                                           "pp_layers",
                                           "pp_layout"};

// Cell readers: empty keeps the default; anything else must parse completely.
struct CellReader {
  const std::map<std::string, std::string>& cells;

  const std::string& text(const std::string& column) const {
    static const std::string kEmpty;
    const auto it = cells.find(column);
    return it == cells.end() ? kEmpty : it->second;
  }
  void integer(const std::string& column, int& out, int minimum) const {
    const std::string& cell = text(column);
    if (cell.empty())
      return;
    long long value = 0;
    const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (error != std::errc() || end != cell.data() + cell.size())
      throw std::invalid_argument(column + ": not an integer: \"" + cell + "\"");
    if (value < minimum || value > 1'000'000'000)
      throw std::invalid_argument(column + ": " + cell + " out of range [" +
                                  std::to_string(minimum) + ", 1e9]");
    out = static_cast<int>(value);
  }
  void flag(const std::string& column, bool& out) const {
    const std::string& cell = text(column);
    if (cell.empty())
      return;
    if (cell == "0" || cell == "false" || cell == "no")
      out = false;
    else if (cell == "1" || cell == "true" || cell == "yes")
      out = true;
    else
      throw std::invalid_argument(column + ": must be 0 or 1, got \"" + cell + "\"");
  }
  void optional_flag(const std::string& column, std::optional<bool>& out) const {
    if (text(column).empty())
      return;
    bool value = false;
    flag(column, value);
    out = value;
  }
  void choice(const std::string& column, std::string& out,
              const std::set<std::string>& allowed) const {
    const std::string& cell = text(column);
    if (cell.empty())
      return;
    if (!allowed.contains(cell)) {
      std::string list;
      for (const std::string& option : allowed)
        list += (list.empty() ? "" : "|") + option;
      throw std::invalid_argument(column + ": must be " + list + ", got \"" + cell + "\"");
    }
    out = cell;
  }
  // Megatron-Core's first/last-stage layers: a count of at least one, or an empty cell (not
  // set). TransformerConfig refuses 0 (num_layers_in_first/last_pipeline_stage must be larger
  // than 0), and so do `simulate --first/last-stage-layers`.
  void stage_layers(const std::string& column, int& out) const {
    if (text(column) == "0")
      throw std::invalid_argument(column +
                                  ": 0 is refused, as by Megatron-Core (the stage's layers must "
                                  "be larger than 0); leave the cell empty when not set");
    integer(column, out, 1);
  }
  // Layers per stage or per virtual stage, ';' between them ("7;8;8;7"): a comma would end the
  // CSV cell. Spaces around an entry are ignored.
  void layer_list(const std::string& column, std::vector<int>& out) const {
    const std::string& cell = text(column);
    if (cell.empty())
      return;
    std::size_t start = 0;
    for (int entry = 1;; ++entry) {
      const std::size_t end = std::min(cell.find(';', start), cell.size());
      std::string item = cell.substr(start, end - start);
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      int value = 0;
      const auto [last, error] = std::from_chars(item.data(), item.data() + item.size(), value);
      if (item.empty() || error != std::errc() || last != item.data() + item.size() || value < 0)
        throw std::invalid_argument(column + ": entry " + std::to_string(entry) + " \"" + item +
                                    "\" is not a layer count (entries are integers >= 0 "
                                    "separated by ';', e.g. 7;8;8;7)");
      out.push_back(value);
      if (end == cell.size())
        break;
      start = end + 1;
    }
  }
  // The cell as a finite number; nothing for an empty cell or one that is not a number.
  std::optional<double> number(const std::string& column) const {
    const std::string& cell = text(column);
    double value = 0;
    const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (cell.empty() || error != std::errc() || end != cell.data() + cell.size() ||
        !std::isfinite(value))
      return std::nullopt;
    return value;
  }
  double positive_number(const std::string& column) const {
    const std::optional<double> value = number(column);
    if (!value || *value <= 0 || *value > 1e15)  // times and sizes alike
      throw std::invalid_argument(column + ": must be a positive number up to 1e15, got \"" +
                                  text(column) + "\"");
    return *value;
  }
};

void read_row(const CellReader& read, MeasuredKind kind, RunRow& row) {
  row.name = read.text("name");
  row.group = read.text("group");
  row.model = read.text("model");
  read.integer("layers", row.layers, 1);
  read.integer("hidden", row.hidden, 1);
  read.integer("heads", row.heads, 1);
  read.integer("kv_heads", row.kv_heads, 1);
  read.integer("head_dim", row.head_dim, 1);
  read.integer("ffn_hidden", row.ffn_hidden, 1);
  read.integer("vocab", row.vocab, 1);
  read.integer("seq_len", row.seq_len, 1);
  read.choice("attention", row.attention, {"flash", "unfused"});
  read.optional_flag("dropout", row.dropout);
  read.optional_flag("gated_ffn", row.gated_ffn);
  read.choice("position_embedding", row.position_embedding, {"learned", "rope"});
  read.optional_flag("tied_embeddings", row.tied_embeddings);
  read.integer("gpus", row.gpus, 1);
  read.integer("tp", row.tp, 1);
  read.integer("pp", row.pp, 1);
  read.integer("dp", row.dp, 1);
  read.integer("cp", row.cp, 1);
  read.integer("ep", row.ep, 1);
  read.integer("etp", row.etp, 1);
  row.order = read.text("order");
  read.integer("virtual_stages", row.virtual_stages, 1);
  read.integer("micro_batch", row.micro_batch, 1);
  read.integer("global_batch", row.global_batch, 1);
  read.choice("recompute", row.recompute, {"none", "selective", "full"});
  row.recompute_modules = read.text("recompute_modules");
  try {
    generators::llm::parse_recompute_modules(row.recompute_modules, "", "");
  } catch (const InputError& problem) {
    throw std::invalid_argument("recompute_modules: " + problem.problem());
  }
  read.flag("sequence_parallel", row.sequence_parallel);
  read.choice("dtype", row.dtype, {"bf16", "fp16", "fp8"});
  read.flag("distributed_optimizer", row.distributed_optimizer);
  read.integer("zero", row.zero_stage, 0);
  if (row.zero_stage > 3)
    throw std::invalid_argument("zero: a ZeRO stage 0, 1, 2 or 3, got \"" + read.text("zero") +
                                "\"");
  read.optional_flag("fp8_param_gather", row.fp8_param_gather);
  read.choice("grad_reduce_dtype", row.grad_reduce_dtype, {"auto", "fp32", "bf16", "fp16"});
  if (!read.text("moe_imbalance").empty()) {
    row.moe_imbalance = read.positive_number("moe_imbalance");
    if (row.moe_imbalance < 1.0)
      throw std::invalid_argument(
          "moe_imbalance: the busiest expert's load over the mean is "
          "at least 1, got \"" +
          read.text("moe_imbalance") + "\"");
  }
  read.optional_flag("overlap_grad_reduce", row.overlap_grad_reduce);
  read.optional_flag("overlap_param_gather", row.overlap_param_gather);
  read.optional_flag("tp_comm_overlap", row.tp_comm_overlap);
  read.optional_flag("overlap_p2p_comm", row.overlap_p2p_comm);
  read.optional_flag("p2p_scatter_gather", row.p2p_scatter_gather);
  read.flag("moe_a2a_overlap", row.moe_a2a_overlap);
  read.flag("delay_wgrad_compute", row.delay_wgrad_compute);
  read.flag("moe_shared_expert_overlap", row.moe_shared_expert_overlap);
  read.optional_flag("moe_router_fusion", row.moe_router_fusion);
  read.optional_flag("moe_permute_fusion", row.moe_permute_fusion);
  read.flag("moe_router_force_load_balancing", row.moe_router_force_load_balancing);
  if (!read.text("moe_expert_capacity_factor").empty()) {
    const std::optional<double> factor = read.number("moe_expert_capacity_factor");
    if (!factor || *factor == 0)
      throw std::invalid_argument(
          "moe_expert_capacity_factor: a capacity factor > 0, or a negative number (-1) for "
          "dropless, got \"" +
          read.text("moe_expert_capacity_factor") + "\"");
    row.moe_expert_capacity_factor = *factor;
  }
  read.flag("moe_pad_expert_input_to_capacity", row.moe_pad_expert_input_to_capacity);
  read.optional_flag("moe_grouped_gemm", row.moe_grouped_gemm);
  read.choice("moe_router_dtype", row.moe_router_dtype, {"fp32"});
  read.choice("moe_token_dispatcher", row.moe_token_dispatcher, {"alltoall", "flex"});
  read.choice("moe_flex_backend", row.moe_flex_backend, {"deepep", "hybridep"});
  read.optional_flag("bias_swiglu_fusion", row.bias_swiglu_fusion);
  read.optional_flag("rope_fusion", row.rope_fusion);
  read.choice("cross_entropy_fusion", row.cross_entropy_fusion, {"none", "native", "te"});
  read.choice("fp8_recipe", row.fp8_recipe, {"delayed", "current", "tensorwise", "blockwise"});
  read.optional_flag("get_batch_sync", row.get_batch_sync);
  read.optional_flag("timer_syncs", row.timer_syncs);
  row.framework = read.text("framework");
  try {
    framework_preset(row.framework);
  } catch (const InputError& problem) {
    throw std::invalid_argument("framework: " + problem.problem());
  }
  row.device = read.text("device");
  row.topology = read.text("topology");
  read.integer("nodes", row.nodes, 1);
  read.stage_layers("first_stage_layers", row.first_stage_layers);
  read.stage_layers("last_stage_layers", row.last_stage_layers);
  read.flag("account_for_embedding", row.account_for_embedding);
  read.flag("account_for_loss", row.account_for_loss);
  read.layer_list("pp_layers", row.pp_layers);
  row.pp_layout = read.text("pp_layout");
  if (!row.pp_layout.empty()) {
    try {  // the syntax now; where the layers land is checked against the model when simulated
      generators::llm::parse_pipeline_layout(row.pp_layout, "", "");
    } catch (const InputError& problem) {
      throw std::invalid_argument("pp_layout: " + problem.problem());
    }
  }
  row.measured_kind = kind;
  row.measured = read.positive_number(std::string(measured_column_name(kind)));

  if (row.model.empty()) {
    for (const char* column : {"layers", "hidden", "heads", "vocab", "seq_len"})
      if (read.text(column).empty())
        throw std::invalid_argument(std::string(column) +
                                    ": needed when the model column is empty");
  }
  if (row.device.empty())
    throw std::invalid_argument("device: empty");
  if (row.topology.empty())
    throw std::invalid_argument("topology: empty");
  if (row.micro_batch == 0 || row.global_batch == 0)
    throw std::invalid_argument("micro_batch and global_batch are needed");
  const long long layout_gpus = static_cast<long long>(row.tp) * row.pp * row.dp * row.cp;
  if (row.gpus == 0)
    row.gpus = static_cast<int>(std::min<long long>(layout_gpus, 1'000'000'000));
  if (layout_gpus != row.gpus)
    throw std::invalid_argument("gpus " + std::to_string(row.gpus) +
                                " is not tp x pp x dp x cp = " + std::to_string(layout_gpus));
  // Megatron's expert mesh: with the experts split as TP, EP ranks of the DP x CP group. With
  // another ETP the EP x ETP ranks tile TP x DP x CP instead (Megatron-Bridge's Qwen3 235B-A22B
  // on H100: TP 2, DP 16, EP 32, ETP 1), which llm::validate checks when the row is simulated.
  // An empty etp cell may mean ETP 1 (the EP ranks then tile TP x DP x CP: the layout says it
  // when the row is simulated), so only a stated ETP equal to TP is held to DP x CP here.
  const bool expert_tp_is_tp = row.etp == row.tp;
  if (expert_tp_is_tp && (static_cast<long long>(row.dp) * row.cp) % row.ep != 0)
    throw std::invalid_argument("ep " + std::to_string(row.ep) + " does not divide dp x cp " +
                                std::to_string(static_cast<long long>(row.dp) * row.cp));
  if (row.global_batch % (static_cast<long long>(row.micro_batch) * row.dp) != 0)
    throw std::invalid_argument("global_batch " + std::to_string(row.global_batch) +
                                " is not a multiple of micro_batch x dp");
}

}  // namespace

const std::vector<std::string>& run_table_columns() {
  return kColumns;
}

std::string_view measured_column_name(MeasuredKind kind) {
  switch (kind) {
    case MeasuredKind::kIterationSeconds:
      return "measured_iteration_s";
    case MeasuredKind::kTflopsPerGpu:
      return "measured_tflops_per_gpu";
    case MeasuredKind::kTokensPerSecondPerGpu:
      return "measured_tokens_per_s_per_gpu";
  }
  return "";
}

RunTable parse_run_table(std::string_view csv_text, const std::string& source) {
  RunTable table;
  table.source = source;
  std::vector<std::string> header;
  std::vector<std::pair<int, std::string>> records;
  int line_number = 0;
  std::size_t position = 0;
  while (position <= csv_text.size()) {
    const std::size_t end = std::min(csv_text.find('\n', position), csv_text.size());
    const std::string_view line = csv_text.substr(position, end - position);
    position = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos || line.front() == '#')
      continue;
    if (header.empty()) {
      header = io::split_csv_record(line);
      continue;
    }
    records.emplace_back(line_number, std::string(line));
    if (end == csv_text.size())
      break;
  }
  if (header.empty())
    throw InputError(source, "", "no header line (expected " + kColumns.front() + ", ...)");

  const std::set<std::string> known(kColumns.begin(), kColumns.end());
  std::set<std::string> seen;
  std::vector<MeasuredKind> measured;
  for (const std::string& column : header) {
    if (!known.contains(column))
      throw InputError(source, "header", "unknown column \"" + column + "\"");
    if (!seen.insert(column).second)
      throw InputError(source, "header", "column \"" + column + "\" appears twice");
    for (MeasuredKind kind : {MeasuredKind::kIterationSeconds, MeasuredKind::kTflopsPerGpu,
                              MeasuredKind::kTokensPerSecondPerGpu})
      if (column == measured_column_name(kind))
        measured.push_back(kind);
  }
  if (measured.size() != 1)
    throw InputError(source, "header",
                     "exactly one measured column is needed (measured_iteration_s, "
                     "measured_tflops_per_gpu or measured_tokens_per_s_per_gpu), found " +
                         std::to_string(measured.size()));
  for (const char* required :
       {"name", "gpus", "tp", "pp", "dp", "micro_batch", "global_batch", "device", "topology"})
    if (!seen.contains(required))
      throw InputError(source, "header", std::string("missing column \"") + required + "\"");
  table.measured_kind = measured.front();

  for (const auto& [number, line] : records) {
    const std::vector<std::string> cells = io::split_csv_record(line);
    if (cells.size() != header.size())
      throw InputError(
          source, "line " + std::to_string(number),
          std::to_string(cells.size()) + " cells, the header has " + std::to_string(header.size()));
    std::map<std::string, std::string> by_column;
    for (std::size_t i = 0; i < cells.size(); ++i)
      by_column[header[i]] = cells[i];
    RunRow row;
    row.line = number;
    try {
      read_row(CellReader{by_column}, table.measured_kind, row);
    } catch (const std::invalid_argument& problem) {
      row.error = problem.what();
    }
    if (row.name.empty())
      row.name = "line " + std::to_string(number);
    table.rows.push_back(std::move(row));
  }
  if (table.rows.empty())
    throw InputError(source, "", "no runs after the header");
  return table;
}

RunTable load_run_table(const std::string& path) {
  return parse_run_table(io::read_file_decompressed(path), path);
}

}  // namespace perfsim::validation
