#include "kernels/model_vs_measured.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <sstream>

namespace perfsim::kernels {
namespace {

constexpr std::array<KernelCategory, 4> kComputeCategories{
    KernelCategory::kGemm, KernelCategory::kEmbeddingLookup, KernelCategory::kMemory,
    KernelCategory::kOther};

std::size_t slot(KernelCategory category) {
  for (std::size_t i = 0; i < kComputeCategories.size(); ++i) {
    if (kComputeCategories[i] == category)
      return i;
  }
  return kComputeCategories.size();
}

bool is_communication_op(const Op& op) {
  return op.comm.has_value() || expand_op(op).status == ExpansionStatus::kCommunication;
}

void add_rows(std::vector<CoverageRow>& rows, const CoverageRow& row) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const CoverageRow& existing) {
    return existing.op_name == row.op_name && existing.status == row.status;
  });
  if (it == rows.end()) {
    rows.push_back(row);
  } else {
    it->count += row.count;
    it->placeholder_us += row.placeholder_us;
  }
}

void sort_rows(std::vector<CoverageRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const CoverageRow& a, const CoverageRow& b) {
    return a.count != b.count ? a.count > b.count : a.op_name < b.op_name;
  });
}

ModelVsMeasured analyse(const Trace& trace, const ModelDurationSource& source, bool measured) {
  ModelVsMeasured out;
  for (KernelCategory category : kComputeCategories)
    out.categories.push_back({category, 0, 0, 0, 0});
  for (std::size_t position : trace.top_level_positions()) {
    const Op& op = trace.ops[position];
    if (is_communication_op(op))
      continue;
    const OpKernelPlan plan = source.expand_kernels(op, trace);
    ++out.coverage.ops_total;
    if (plan.uncovered.empty())
      ++out.coverage.ops_covered;
    for (const PredictedKernel& kernel : plan.kernels) {
      out.coverage.predicted_us_total += kernel.predicted_us;
      if (kernel.model != kUnmodeledModel)
        out.coverage.predicted_us_covered += kernel.predicted_us;
      out.predicted_us_by_model[kernel.model] += kernel.predicted_us;
      const std::size_t index = slot(kernel.kernel.category);
      if (index < out.categories.size()) {
        out.categories[index].predicted_us += kernel.predicted_us;
        ++out.categories[index].predicted_kernels;
      }
    }
    for (const UncoveredOp& uncovered : plan.uncovered) {
      DurationUs placeholder_us = 0;
      for (const PredictedKernel& kernel : plan.kernels) {
        if (kernel.op_id == uncovered.op_id && kernel.model == kUnmodeledModel)
          placeholder_us += kernel.predicted_us;
      }
      add_rows(out.coverage.uncovered, {std::string(canonical_op_name(uncovered.op_name)),
                                        std::string(expansion_status_name(uncovered.status)), 1,
                                        placeholder_us, uncovered.note});
    }
    if (!measured)
      continue;
    for (const Kernel* kernel : trace.kernels_under(position)) {
      const std::size_t index = slot(kernel->category);
      if (index >= out.categories.size() || !kernel->measured_duration_us)
        continue;
      out.categories[index].measured_us += *kernel->measured_duration_us;
      ++out.categories[index].measured_kernels;
    }
  }
  sort_rows(out.coverage.uncovered);
  return out;
}

std::string fixed(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

}  // namespace

CoverageTable kernel_coverage(const Trace& trace, const ModelDurationSource& source) {
  return analyse(trace, source, false).coverage;
}

ModelVsMeasured compare_with_measured(const Trace& trace, const ModelDurationSource& source) {
  return analyse(trace, source, true);
}

void accumulate(ModelVsMeasured& total, const ModelVsMeasured& rank) {
  if (total.categories.empty())
    total.categories = std::vector<CategoryComparison>(rank.categories.size());
  for (std::size_t i = 0; i < rank.categories.size(); ++i) {
    total.categories[i].category = rank.categories[i].category;
    total.categories[i].measured_us += rank.categories[i].measured_us;
    total.categories[i].predicted_us += rank.categories[i].predicted_us;
    total.categories[i].measured_kernels += rank.categories[i].measured_kernels;
    total.categories[i].predicted_kernels += rank.categories[i].predicted_kernels;
  }
  total.coverage.ops_total += rank.coverage.ops_total;
  total.coverage.ops_covered += rank.coverage.ops_covered;
  total.coverage.predicted_us_total += rank.coverage.predicted_us_total;
  total.coverage.predicted_us_covered += rank.coverage.predicted_us_covered;
  for (const CoverageRow& row : rank.coverage.uncovered)
    add_rows(total.coverage.uncovered, row);
  sort_rows(total.coverage.uncovered);
  for (const auto& [model, time_us] : rank.predicted_us_by_model)
    total.predicted_us_by_model[model] += time_us;
}

std::string format_coverage(const CoverageTable& coverage) {
  std::ostringstream out;
  out << "coverage: " << coverage.ops_covered << " of " << coverage.ops_total << " top-level ops ("
      << fixed(100 * coverage.op_share()) << "%), " << fixed(coverage.predicted_us_covered)
      << " of " << fixed(coverage.predicted_us_total) << " us predicted time ("
      << fixed(100 * coverage.time_share()) << "%)\n";
  if (!coverage.uncovered.empty())
    out << "uncovered op\tstatus\tcount\tplaceholder_us\tnote\n";
  for (const CoverageRow& row : coverage.uncovered) {
    out << row.op_name << "\t" << row.status << "\t" << row.count << "\t"
        << fixed(row.placeholder_us) << "\t" << row.note << "\n";
  }
  return out.str();
}

std::string format_comparison(const ModelVsMeasured& comparison) {
  std::ostringstream out;
  out << "category\tmeasured_us\tpredicted_us\terror_pct\tmeasured_kernels\tpredicted_kernels\n";
  for (const CategoryComparison& row : comparison.categories) {
    out << kernel_category_name(row.category) << "\t" << fixed(row.measured_us) << "\t"
        << fixed(row.predicted_us) << "\t" << fixed(100 * row.relative_error()) << "\t"
        << row.measured_kernels << "\t" << row.predicted_kernels << "\n";
  }
  out << "predicted time by model:";
  for (const auto& [model, time_us] : comparison.predicted_us_by_model)
    out << " " << model << "=" << fixed(time_us) << "us";
  out << "\n" << format_coverage(comparison.coverage);
  return out.str();
}

}  // namespace perfsim::kernels
