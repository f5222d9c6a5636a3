// The first screen of `simulate` (issue 19): a 16-rank LLM layout simulated in process, reported
// the way `perfsim simulate --model` reports it. The summary fits in 25 lines and holds the
// answer; the breakdown adds up to the iteration time; the pipeline bubble is the waiting before
// point-to-point transfers start, apart from the transfers; the JSON form (parsed back) carries
// the figures the text prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "report/run_breakdown.hpp"
#include "report/run_report_json.hpp"
#include "report/summary_screen.hpp"
#include "scenario/llm_report.hpp"
#include "scenario/plan_simulation.hpp"
#include "support/dgx_a100_scenario.hpp"
#include "support/small_gpt.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

llm::TransformerConfig small_gpt() {
  return test_support::small_gpt(8, 1024, 16);
}

struct Reported {
  std::vector<RankResult> results;
  report::RunReport report;
  report::GroupKindOf kind_of;
};

// What `simulate --model small-gpt --tp 2 --pp 4 --dp 2` reports (every rank simulated).
Reported simulate_and_report(int pp) {
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = pp;
  parallel.dp = 8 / pp;
  const LlmScenario scenario = test_support::dgx_a100_scenario(small_gpt(), parallel, 2);
  Reported out;
  out.results = simulate_layout(scenario, SimulatedRanks::kAll).results;
  out.kind_of = [parallel](const std::string& group) { return llm_group_kind(group, parallel); };
  out.report = report::build_run_report(out.results, out.kind_of);
  const devices::DeviceSpec device =
      devices::parse_device_json(scenario.device_json, scenario.device_source);
  const LlmReportContext context{scenario,
                                 device.gemm_peak_flops_per_s(scenario.model.activation_dtype()),
                                 memory::device_memory_of(device), device.name};
  complete_llm_report(context, out.results, out.report);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// The number after the first `label` followed by white space and a digit (no std::regex: it
// trips GCC 12's maybe-uninitialized warning in the sanitizer build).
double number_after(const std::string& text, const std::string& label) {
  for (std::size_t at = text.find(label); at != std::string::npos; at = text.find(label, at + 1)) {
    std::size_t i = at + label.size();
    const std::size_t spaces = i;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
      ++i;
    if (i == spaces || i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i])))
      continue;
    std::size_t end = i;
    while (end < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
      ++end;
    return std::stod(text.substr(i, end - i));
  }
  ADD_FAILURE() << "no '" << label << "' followed by a number in\n" << text;
  return 0;
}

const report::BreakdownLine* line_of(const report::RunReport& report, const std::string& key) {
  for (const report::BreakdownLine& line : report.breakdown)
    if (line.key == key)
      return &line;
  return nullptr;
}

TEST(ReportSummaryScreen, AnswerInTheFirst25Lines) {
  const Reported run = simulate_and_report(4);
  const std::string text = report::format_summary_screen(run.report);
  const std::vector<std::string> lines = lines_of(text);
  EXPECT_LE(lines.size(), report::kSummaryScreenLines) << text;
  EXPECT_NE(text.find("iteration time"), std::string::npos) << text;
  EXPECT_NE(text.find("MFU"), std::string::npos) << text;
  EXPECT_NE(text.find("memory per GPU (closed form): fits on A100-80GB"), std::string::npos)
      << text;
  for (int stage = 0; stage < 4; ++stage)
    EXPECT_NE(text.find("  stage " + std::to_string(stage) + " "), std::string::npos) << text;
  EXPECT_NE(text.find("pipeline bubble"), std::string::npos) << text;
  EXPECT_NE(text.find("exposed pipeline p2p transfer"), std::string::npos) << text;
}

TEST(ReportSummaryScreen, BreakdownAddsUpToTheIteration) {
  const Reported run = simulate_and_report(4);
  double slowest = 0, mean = 0;
  for (const report::BreakdownLine& line : run.report.breakdown) {
    slowest += line.slowest_rank_us;
    mean += line.mean_us;
  }
  EXPECT_NEAR(slowest, run.report.iteration_us, 1e-6 * run.report.iteration_us);
  EXPECT_NEAR(mean, run.report.mean_iteration_us, 1e-6 * run.report.mean_iteration_us);
  ASSERT_NE(line_of(run.report, "compute"), nullptr);
  EXPECT_GT(line_of(run.report, "compute")->mean_us, 0);
}

// The bubble is the p2p waiting before transfers start, the exposed transfer the rest: both
// from the engine's per-group figures, never more than the waiting itself.
TEST(ReportSummaryScreen, BubbleAndP2pTransferSplitTheExposedP2pTime) {
  const Reported run = simulate_and_report(4);
  double exposed_p2p = 0, before_start = 0;
  for (const RankResult& result : run.results) {
    for (const auto& [group, traffic] : result.groups) {
      EXPECT_GE(traffic.exposed_before_start_us, 0) << group;
      EXPECT_LE(traffic.exposed_before_start_us, traffic.exposed_us + 1e-9) << group;
      if (run.kind_of(group) != "p2p")
        continue;
      exposed_p2p += traffic.exposed_us;
      before_start += traffic.exposed_before_start_us;
    }
  }
  const double ranks = static_cast<double>(run.results.size());
  const report::BreakdownLine* bubble = line_of(run.report, "bubble");
  const report::BreakdownLine* transfer = line_of(run.report, "exposed_p2p");
  ASSERT_NE(bubble, nullptr);
  ASSERT_NE(transfer, nullptr);
  EXPECT_GT(bubble->mean_us, 0);
  EXPECT_NEAR(bubble->mean_us, before_start / ranks, 1e-6 * exposed_p2p);
  EXPECT_NEAR(bubble->mean_us + transfer->mean_us, exposed_p2p / ranks, 1e-6 * exposed_p2p);
  ASSERT_TRUE(run.report.ideal_bubble_fraction.has_value());
  // 1F1B with P = 4 and M = 16 / (1 x 2) = 8 micro-batches: (P-1)/(M+P-1) = 3/11.
  EXPECT_NEAR(*run.report.ideal_bubble_fraction, 3.0 / 11.0, 1e-12);
}

TEST(ReportSummaryScreen, NoPipelineNoBubble) {
  const Reported run = simulate_and_report(1);
  EXPECT_EQ(line_of(run.report, "bubble"), nullptr);
  EXPECT_FALSE(run.report.ideal_bubble_fraction.has_value());
  EXPECT_EQ(report::format_summary_screen(run.report).find("bubble"), std::string::npos);
}

TEST(ReportSummaryScreen, JsonCarriesTheFiguresTheTextPrints) {
  const Reported run = simulate_and_report(4);
  const std::string text = report::format_summary_screen(run.report);
  const nlohmann::json doc =
      nlohmann::json::parse(report::run_report_json(run.report, run.results, run.kind_of).dump(2));
  EXPECT_EQ(doc.at("schema"), "perfsim-simulate/1");
  EXPECT_EQ(doc.at("ranks"), 16);
  // The text rounds: to the printed digits.
  const double iteration_ms = number_after(text, "iteration time");
  EXPECT_NEAR(doc.at("iteration_us").get<double>() / 1000, iteration_ms, 0.0005 + 1e-9);
  const double mfu_percent = number_after(text, "MFU");
  EXPECT_NEAR(100 * doc.at("throughput").at("mfu").get<double>(), mfu_percent, 0.05 + 1e-9);
  const double tokens_per_s = number_after(text, "throughput");
  EXPECT_NEAR(doc.at("throughput").at("tokens_per_s").get<double>(), tokens_per_s, 0.5 + 1e-9);
  EXPECT_EQ(doc.at("throughput").at("tokens_per_iteration").get<double>(), 16.0 * 1024);
  EXPECT_EQ(doc.at("memory").at("fits"), true);
  EXPECT_EQ(doc.at("memory").at("stages").size(), 4u);
  const double stage0_gib = number_after(text, "stage 0");
  EXPECT_NEAR(
      doc.at("memory").at("stages").at(0).at("total_bytes").get<double>() / (1024.0 * 1024 * 1024),
      stage0_gib, 0.005 + 1e-9);
  for (const auto& line : doc.at("breakdown")) {
    const report::BreakdownLine* reported = line_of(run.report, line.at("key"));
    ASSERT_NE(reported, nullptr) << line.at("key");
    EXPECT_EQ(line.at("mean_us").get<double>(), reported->mean_us);
    EXPECT_FALSE(line.at("definition").get<std::string>().empty());
  }
  // Rank classes cover every rank once.
  std::size_t covered = 0;
  for (const auto& rank_class : doc.at("rank_classes"))
    covered += rank_class.at("count").get<std::size_t>();
  EXPECT_EQ(covered, 16u);
  // Point-to-point pairs are one kind, not one row each.
  std::size_t p2p_rows = 0;
  for (const auto& kind : doc.at("group_kinds"))
    p2p_rows += kind.at("kind") == "p2p";
  EXPECT_EQ(p2p_rows, 1u);
}

TEST(ReportSummaryScreen, CsvHasOneFigureARow) {
  const Reported run = simulate_and_report(4);
  const std::string csv = report::run_report_csv(run.report);
  const std::vector<std::string> lines = lines_of(csv);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front(), "figure,value,unit");
  for (const std::string& line : lines)
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 2) << line;
  EXPECT_NE(csv.find("\nthroughput.mfu,"), std::string::npos);
  EXPECT_NE(csv.find("\nbreakdown.bubble.mean_us,"), std::string::npos);
  EXPECT_NE(csv.find("\nmemory.stage.3.total_bytes,"), std::string::npos);
}

// However many caveats a run has, the screen stays 25 lines with the answer on it.
TEST(ReportSummaryScreen, ManyWarningsDoNotPushTheAnswerOff) {
  Reported run = simulate_and_report(4);
  for (int i = 0; i < 40; ++i)
    run.report.warnings.push_back("warning " + std::to_string(i));
  const std::string text = report::format_summary_screen(run.report);
  const std::vector<std::string> lines = lines_of(text);
  EXPECT_LE(lines.size(), report::kSummaryScreenLines);
  EXPECT_EQ(lines.front(), "warning 0");
  EXPECT_NE(text.find("35 more warnings"), std::string::npos) << text;
  EXPECT_NE(text.find("iteration time"), std::string::npos) << text;
  EXPECT_NE(text.find("MFU"), std::string::npos) << text;
}

}  // namespace
}  // namespace perfsim::scenario
