#pragma once
// How well the kernel models cover and predict a trace: the coverage table (which ops no
// model covers, and the share of ops and of predicted time that models cover) and, for a
// trace with measured kernels (Kineto), predicted vs measured kernel time per category of
// seed 001 Fig. 2 (GEMM, embedding lookup, memory, other). Communication is left to the
// collective models and excluded.
#include <map>
#include <string>
#include <vector>

#include "kernels/model_duration_source.hpp"

namespace perfsim::kernels {

struct CoverageRow {
  std::string op_name;  // the uncovered op (a top-level op or one of its descendants)
  std::string status;   // "unknown-op" or "missing-shapes"
  std::size_t count = 0;
  DurationUs placeholder_us = 0;  // time charged to it at the kernel floor
  std::string note;
};

struct CoverageTable {
  std::size_t ops_total = 0;    // top-level ops, communication ops excluded
  std::size_t ops_covered = 0;  // every kernel they launch has a model
  DurationUs predicted_us_total = 0;
  DurationUs predicted_us_covered = 0;  // excluding placeholder kernels
  std::vector<CoverageRow> uncovered;   // most frequent first
  double op_share() const { return ops_total ? double(ops_covered) / double(ops_total) : 1.0; }
  double time_share() const {
    return predicted_us_total > 0 ? predicted_us_covered / predicted_us_total : 1.0;
  }
};

struct CategoryComparison {
  KernelCategory category = KernelCategory::kOther;
  DurationUs measured_us = 0;
  DurationUs predicted_us = 0;
  std::size_t measured_kernels = 0;
  std::size_t predicted_kernels = 0;
  // (predicted - measured) / measured, or 0 when nothing was measured.
  double relative_error() const {
    return measured_us > 0 ? (predicted_us - measured_us) / measured_us : 0.0;
  }
};

struct ModelVsMeasured {
  std::vector<CategoryComparison> categories;  // GEMM, embedding lookup, memory, other
  CoverageTable coverage;
  std::map<std::string, DurationUs> predicted_us_by_model;
};

// Expands every top-level op with the models (as for an execution trace).
CoverageTable kernel_coverage(const Trace& trace, const ModelDurationSource& source);
// Also sums the measured kernels under each top-level op, per category.
ModelVsMeasured compare_with_measured(const Trace& trace, const ModelDurationSource& source);
// Adds b's figures into a (several ranks into one table).
void accumulate(ModelVsMeasured& total, const ModelVsMeasured& rank);

// Human-readable tables (fixed column order, two decimals).
std::string format_coverage(const CoverageTable& coverage);
std::string format_comparison(const ModelVsMeasured& comparison);

}  // namespace perfsim::kernels
