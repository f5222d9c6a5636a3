// The HTML report (src/report/html_report.hpp): well-formed (every tag it opens is closed, in
// order), self-contained (no http(s):// reference), one chart per chart section, every string
// escaped, and a pipeline schedule a reader can check by hand: PP 2 with 4 micro-batches runs
// Megatron's 1F1B order (Narayanan et al. 2021, Fig. 4 top) and each stage waits for the other.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/input_file.hpp"
#include "report/html_report.hpp"
#include "report/run_breakdown.hpp"
#include "report/svg_chart.hpp"
#include "scenario/folded_simulation.hpp"
#include "support/small_gpt.hpp"
#include "topology/topology.hpp"

namespace perfsim {
namespace {

namespace llm = generators::llm;

const std::string kSource = PERFSIM_SOURCE_DIR;

llm::TransformerConfig small_gpt() {
  return test_support::small_gpt(4, 768, 4);
}

// PP 2 x TP 2, micro-batch 1, global batch 4: 4 micro-batches per pipeline (by default).
scenario::FoldedRun pipeline_run(int stages = 2, int virtual_stages = 1, int global_batch = 4) {
  llm::TransformerConfig model = small_gpt();
  model.layers = 2 * stages * virtual_stages;
  model.global_batch = global_batch;
  llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = stages;
  parallel.dp = 1;
  parallel.virtual_stages = virtual_stages;
  const std::string device_file = kSource + "/configs/devices/A100-80GB.json";
  const scenario::LlmScenario scenario{
      model,
      parallel,
      topology::load_topology(kSource + "/configs/topologies/dgx-a100.json"),
      io::read_file_decompressed(device_file),
      device_file,
      ""};
  scenario::FoldedRun run = scenario::fold_in_process(scenario, false);
  EXPECT_FALSE(run.refusal) << run.refusal.value_or("");
  return run;
}

report::RunReport report_of(const scenario::FoldedRun& run) {
  report::RunReport report = report::build_run_report(run.results, run.inputs.group_kind);
  run.inputs.complete_report(run.results, report);
  return report;
}

// Open and close tags balance in order; void elements (meta) and self-closed tags aside.
// Returns "" or what is wrong.
std::string unbalanced_tags(const std::string& html) {
  std::vector<std::string> open;
  std::size_t at = 0;
  while ((at = html.find('<', at)) != std::string::npos) {
    const std::size_t end = html.find('>', at);
    if (end == std::string::npos)
      return "unterminated tag at " + std::to_string(at);
    const std::string tag = html.substr(at + 1, end - at - 1);
    at = end + 1;
    if (tag.empty())
      return "empty tag";
    if (tag[0] == '!')  // <!DOCTYPE html>
      continue;
    if (tag.back() == '/')
      continue;
    const bool closing = tag[0] == '/';
    const std::string name =
        tag.substr(closing ? 1 : 0, tag.find_first_of(" \n", closing ? 1 : 0) - (closing ? 1 : 0));
    if (name == "meta")
      continue;
    if (!closing) {
      open.push_back(name);
      continue;
    }
    if (open.empty() || open.back() != name)
      return "</" + name + "> closes <" + (open.empty() ? std::string("nothing") : open.back()) +
             ">";
    open.pop_back();
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t found = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++found;
  return found;
}

std::string section_of(const std::string& html, const std::string& id) {
  const std::size_t start = html.find("<section id=\"" + id + "\">");
  if (start == std::string::npos)
    return "";
  return html.substr(start, html.find("</section>", start) - start);
}

// The Gantt bars' hover texts, in document order.
std::vector<std::string> gantt_tooltips(const std::string& html) {
  std::vector<std::string> tooltips;
  const std::string marker = "<g class=\"step\">";
  for (std::size_t at = html.find(marker); at != std::string::npos;
       at = html.find(marker, at + 1)) {
    const std::size_t title = html.find("<title>", at) + 7;
    const std::string text = html.substr(title, html.find("</title>", title) - title);
    tooltips.push_back(text.substr(0, text.find(':')));
  }
  return tooltips;
}

TEST(HtmlReport, PipelineStepsFollowOneFOneBAndWaitForTheOtherStage) {
  const scenario::FoldedRun run = pipeline_run();
  const report::RunReport report = report_of(run);
  ASSERT_EQ(report.pipeline.size(), 2u);
  // Warm-up forwards (P - 1 - stage), then one forward and one backward, then the backwards.
  const std::vector<std::vector<std::pair<std::string, int>>> expected = {{{"forward", 0},
                                                                           {"forward", 1},
                                                                           {"backward", 0},
                                                                           {"forward", 2},
                                                                           {"backward", 1},
                                                                           {"forward", 3},
                                                                           {"backward", 2},
                                                                           {"backward", 3}},
                                                                          {{"forward", 0},
                                                                           {"backward", 0},
                                                                           {"forward", 1},
                                                                           {"backward", 1},
                                                                           {"forward", 2},
                                                                           {"backward", 2},
                                                                           {"forward", 3},
                                                                           {"backward", 3}}};
  for (int stage = 0; stage < 2; ++stage) {
    const auto& steps = report.pipeline[stage].steps;
    ASSERT_EQ(steps.size(), 8u) << "stage " << stage;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      EXPECT_EQ(steps[i].phase, expected[stage][i].first) << "stage " << stage << " step " << i;
      EXPECT_EQ(steps[i].micro_batch, expected[stage][i].second)
          << "stage " << stage << " step " << i;
      EXPECT_GE(steps[i].start_us, 0);
      EXPECT_GT(steps[i].end_us, steps[i].start_us);
      if (i > 0) {
        EXPECT_GE(steps[i].start_us, steps[i - 1].end_us) << "stage " << stage << " step " << i;
      }
    }
  }
  auto span = [&](int stage, const std::string& phase, int micro_batch) {
    for (const StepSpan& step : report.pipeline[stage].steps)
      if (step.phase == phase && step.micro_batch == micro_batch)
        return step;
    ADD_FAILURE() << "no " << phase << " " << micro_batch << " on stage " << stage;
    return StepSpan{};
  };
  for (int mb = 0; mb < 4; ++mb) {
    // Stage 1 computes on stage 0's activation; stage 0's backward on stage 1's gradient.
    EXPECT_GE(span(1, "forward", mb).start_us, span(0, "forward", mb).end_us) << mb;
    EXPECT_GE(span(0, "backward", mb).start_us, span(1, "backward", mb).end_us) << mb;
  }
  // The last backward ends before the iteration does (gradient reduction, optimizer after).
  EXPECT_LE(report.pipeline[0].steps.back().end_us, report.iteration_us);
}

TEST(HtmlReport, WellFormedSelfContainedOneChartPerSection) {
  const scenario::FoldedRun run = pipeline_run();
  const report::RunReport report = report_of(run);
  const std::string html = report::render_run_html(report, run.results, run.inputs.group_kind);
  EXPECT_EQ(unbalanced_tags(html), "");
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  for (const char* id : {"pipeline", "breakdown", "memory", "communication"}) {
    const std::string body = section_of(html, id);
    ASSERT_FALSE(body.empty()) << id;
    EXPECT_EQ(count(body, "<svg "), 1u) << id;
    EXPECT_NE(body.find(" (ms)</text>") + body.find(" (GiB)</text>"), 2 * std::string::npos)
        << id << ": an axis names its unit";
  }
  // The Gantt: 2 stages x 4 micro-batches x (forward, backward), stage by stage in time order.
  const std::vector<std::string> tooltips = gantt_tooltips(html);
  ASSERT_EQ(tooltips.size(), 16u);
  EXPECT_EQ(tooltips[0], "stage 0, forward of micro-batch 0");
  EXPECT_EQ(tooltips[1], "stage 0, forward of micro-batch 1");
  EXPECT_EQ(tooltips[2], "stage 0, backward of micro-batch 0");
  EXPECT_EQ(tooltips[7], "stage 0, backward of micro-batch 3");
  EXPECT_EQ(tooltips[8], "stage 1, forward of micro-batch 0");
  EXPECT_EQ(tooltips[9], "stage 1, backward of micro-batch 0");
  EXPECT_EQ(tooltips[15], "stage 1, backward of micro-batch 3");
}

TEST(HtmlReport, InterleavedScheduleLabelsChunks) {
  const scenario::FoldedRun run = pipeline_run(3, 2, 6);  // interleaving needs 3 stages or more
  const report::RunReport report = report_of(run);
  ASSERT_EQ(report.pipeline.size(), 3u);
  for (const report::PipelineStageSteps& stage : report.pipeline) {
    ASSERT_EQ(stage.steps.size(), 24u);  // 6 micro-batches x 2 chunks x (forward, backward)
    int chunk_one = 0;
    for (const StepSpan& step : stage.steps)
      chunk_one += step.chunk == 1;
    EXPECT_EQ(chunk_one, 12);
    // The first forward is chunk 0's, the last backward chunk 0's too (Narayanan et al. 2021,
    // Sec. 2.2.2: chunks run 0..V-1 forward and V-1..0 backward).
    EXPECT_EQ(stage.steps.front().chunk, 0);
    EXPECT_EQ(stage.steps.back().chunk, 0);
  }
  const std::string html = report::render_run_html(report, run.results, run.inputs.group_kind);
  EXPECT_EQ(unbalanced_tags(html), "");
  EXPECT_NE(html.find("backward chunk 1"), std::string::npos);
}

TEST(HtmlReport, EscapesEveryString) {
  const scenario::FoldedRun run = pipeline_run();
  report::RunReport report = report_of(run);
  report.workload = "<script>alert('x')</script> & \"more\"";
  report.warnings.push_back("<b>not bold</b>");
  const std::string html = report::render_run_html(report, run.results, run.inputs.group_kind);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;more&quot;"),
            std::string::npos);
  EXPECT_EQ(unbalanced_tags(html), "");
}

TEST(HtmlReport, PlanPageSaysWhyEachLayoutWasNotChosen) {
  report::PlanPage plan;
  plan.title = "small-gpt on 8 x A100-80GB";
  plan.capacity_bytes = 80LL << 30;
  using report::LayoutFate;
  plan.layouts = {{"TP2 PP2 DP2", LayoutFate::kChosen, 100e3, 0.5, 40LL << 30},
                  {"TP4 PP2 DP1", LayoutFate::kRanked, 110e3, 0.45, 30LL << 30},
                  {"TP1 PP8 DP1", LayoutFate::kSlower, 150e3, 0.3, 20LL << 30},
                  {"TP8 PP1 DP1", LayoutFate::kPruned, 130e3, 0, 50LL << 30},
                  {"TP1 PP1 DP8", LayoutFate::kOutOfMemory, 0, 0, 90LL << 30}};
  const std::string html = report::render_plan_html(plan, nullptr, {}, report::group_kind);
  EXPECT_EQ(unbalanced_tags(html), "");
  EXPECT_EQ(html.find("http://"), std::string::npos);
  const std::string ranking = section_of(html, "ranking");
  EXPECT_EQ(count(ranking, "<svg "), 2u);  // iteration times, and the layouts that do not fit
  EXPECT_EQ(count(ranking, "<tr>"), 6u);   // header and one row per layout
  EXPECT_NE(ranking.find("fastest simulated layout"), std::string::npos);
  EXPECT_NE(ranking.find("10.0% slower than the chosen layout"), std::string::npos);
  EXPECT_NE(ranking.find("50.0% slower than the chosen layout and outside the top"),
            std::string::npos);
  EXPECT_NE(ranking.find("lower bound 130.000 ms cannot beat the last of the top (110.000 ms)"),
            std::string::npos);
  EXPECT_NE(ranking.find("needs 90.00 GiB, 10.00 GiB more than the device holds"),
            std::string::npos);
}

TEST(SvgChart, NiceTicksCoverTheMaximumInOneTwoFiveSteps) {
  EXPECT_EQ(report::nice_ticks(9.3), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(report::nice_ticks(1000), (std::vector<double>{0, 200, 400, 600, 800, 1000}));
  EXPECT_EQ(report::nice_ticks(0).back(), 1);  // an empty chart still has an axis
}

}  // namespace
}  // namespace perfsim
