// RUNS.csv parsing (validation/run_table.hpp): columns, defaults, per-row problems that do not
// abort the table, and table-level errors that name the column.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "perfsim/error.hpp"
#include "validation/run_table.hpp"

namespace perfsim::validation {
namespace {

const std::string kHeader =
    "name,group,model,gpus,tp,pp,dp,micro_batch,global_batch,recompute,device,topology,"
    "measured_iteration_s\n";

TEST(RunTable, ReadsRowsWithDefaults) {
  const RunTable table =
      parse_run_table("# a comment\n" + kHeader +
                          "a,g,llama3-8b,8,2,2,2,1,16,full,A100-80GB,dgx-a100,1.5\n"
                          "\"b, quoted\",g,llama3-8b,8,8,1,1,2,4,,H100-SXM,hgx-h100,0.25\n",
                      "runs.csv");
  ASSERT_EQ(table.rows.size(), 2u);
  const RunRow& a = table.rows[0];
  EXPECT_EQ(a.line, 3);
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.tp, 2);
  EXPECT_EQ(a.pp, 2);
  EXPECT_EQ(a.dp, 2);
  EXPECT_EQ(a.cp, 1);
  EXPECT_EQ(a.ep, 1);
  EXPECT_EQ(a.virtual_stages, 1);
  EXPECT_EQ(a.recompute, "full");
  EXPECT_EQ(a.dtype, "bf16");
  EXPECT_FALSE(a.sequence_parallel);
  EXPECT_DOUBLE_EQ(a.measured, 1.5);
  EXPECT_TRUE(a.error.empty()) << a.error;
  EXPECT_EQ(table.rows[1].name, "b, quoted");
  EXPECT_EQ(table.rows[1].recompute, "none");
  EXPECT_EQ(table.measured_kind, MeasuredKind::kIterationSeconds);
}

TEST(RunTable, OrderColumnIsOptional) {
  // Megatron's --use-tp-pp-dp-mapping run; an empty cell keeps the default order.
  const RunTable table = parse_run_table(
      "name,model,gpus,tp,pp,dp,order,micro_batch,global_batch,device,topology,"
      "measured_iteration_s\n"
      "a,llama3-8b,8,2,2,2,tp-cp-ep-pp-dp,1,16,A100-80GB,dgx-a100,1.5\n"
      "b,llama3-8b,8,2,2,2,,1,16,A100-80GB,dgx-a100,1.5\n",
      "runs.csv");
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].order, "tp-cp-ep-pp-dp");
  EXPECT_EQ(table.rows[1].order, "");
  EXPECT_EQ(parse_run_table(kHeader + "a,g,m,8,8,1,1,1,8,none,A100-80GB,dgx-a100,1\n", "runs.csv")
                .rows[0]
                .order,
            "");
}

TEST(RunTable, OverlapSwitchesAreOptionalFlags) {
  const std::string header =
      "name,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,overlap_grad_reduce,"
      "overlap_param_gather,tp_comm_overlap,overlap_p2p_comm,measured_iteration_s\n";
  const RunTable table = parse_run_table(header +
                                             "on,8,8,1,1,1,8,H100-SXM,hgx-h100,1,1,1,1,1\n"
                                             "off,8,8,1,1,1,8,H100-SXM,hgx-h100,0,0,0,0,1\n"
                                             "default,8,8,1,1,1,8,H100-SXM,hgx-h100,,,,,1\n"
                                             "bad,8,8,1,1,1,8,H100-SXM,hgx-h100,,,2,,1\n",
                                         "runs.csv");
  ASSERT_EQ(table.rows.size(), 4u);
  const RunRow& on = table.rows[0];
  EXPECT_EQ(on.overlap_grad_reduce, std::optional<bool>(true));
  EXPECT_EQ(on.overlap_param_gather, std::optional<bool>(true));
  EXPECT_EQ(on.tp_comm_overlap, std::optional<bool>(true));
  EXPECT_EQ(on.overlap_p2p_comm, std::optional<bool>(true));
  const RunRow& off = table.rows[1];
  EXPECT_EQ(off.tp_comm_overlap, std::optional<bool>(false));
  EXPECT_EQ(off.overlap_p2p_comm, std::optional<bool>(false));
  const RunRow& unset = table.rows[2];
  EXPECT_FALSE(unset.overlap_grad_reduce || unset.overlap_param_gather || unset.tp_comm_overlap ||
               unset.overlap_p2p_comm);
  EXPECT_NE(table.rows[3].error.find("tp_comm_overlap: must be 0 or 1"), std::string::npos)
      << table.rows[3].error;
}

TEST(RunTable, BadCellsStayWithTheirRow) {
  const RunTable table =
      parse_run_table(kHeader +
                          "ok,g,m,8,8,1,1,1,8,none,A100-80GB,dgx-a100,1\n"
                          "badgpus,g,m,6,8,1,1,1,8,none,A100-80GB,dgx-a100,1\n"
                          "badrecompute,g,m,8,8,1,1,1,8,some,A100-80GB,dgx-a100,1\n"
                          "badbatch,g,m,8,2,1,4,2,12,none,A100-80GB,dgx-a100,1\n"
                          "badtime,g,m,8,8,1,1,1,8,none,A100-80GB,dgx-a100,-3\n"
                          "text,g,m,8,x,1,1,1,8,none,A100-80GB,dgx-a100,1\n",
                      "runs.csv");
  ASSERT_EQ(table.rows.size(), 6u);
  EXPECT_TRUE(table.rows[0].error.empty());
  EXPECT_NE(table.rows[1].error.find("tp x pp x dp x cp"), std::string::npos);
  EXPECT_NE(table.rows[2].error.find("recompute"), std::string::npos);
  EXPECT_NE(table.rows[3].error.find("multiple of micro_batch x dp"), std::string::npos);
  EXPECT_NE(table.rows[4].error.find("positive"), std::string::npos);
  EXPECT_NE(table.rows[5].error.find("tp: not an integer"), std::string::npos);
}

TEST(RunTable, ZeroColumnTakesAStageFromZeroToThree) {
  const RunTable table = parse_run_table(
      "name,model,seq_len,gpus,tp,pp,dp,micro_batch,global_batch,zero,distributed_optimizer,"
      "device,topology,measured_iteration_s\n"
      "unset,llama3-8b,4096,8,1,1,8,1,8,,,H100-SXM,hgx-h100,1\n"
      "fsdp,llama3-8b,4096,8,1,1,8,1,8,3,,H100-SXM,hgx-h100,1\n"
      "zero2,llama3-8b,4096,8,1,1,8,1,8,2,1,H100-SXM,hgx-h100,1\n"
      "four,llama3-8b,4096,8,1,1,8,1,8,4,,H100-SXM,hgx-h100,1\n"
      "negative,llama3-8b,4096,8,1,1,8,1,8,-1,,H100-SXM,hgx-h100,1\n",
      "runs.csv");
  ASSERT_EQ(table.rows.size(), 5u);
  EXPECT_EQ(table.rows[0].zero_stage, 0);
  EXPECT_EQ(table.rows[1].zero_stage, 3);
  EXPECT_TRUE(table.rows[1].error.empty()) << table.rows[1].error;
  EXPECT_EQ(table.rows[2].zero_stage, 2);
  EXPECT_TRUE(table.rows[2].distributed_optimizer);
  EXPECT_NE(table.rows[3].error.find("zero: a ZeRO stage 0, 1, 2 or 3"), std::string::npos)
      << table.rows[3].error;
  EXPECT_NE(table.rows[4].error.find("zero"), std::string::npos) << table.rows[4].error;
}

TEST(RunTable, InlineModelNeedsItsShape) {
  const RunTable table = parse_run_table(
      "name,model,layers,hidden,heads,vocab,seq_len,gpus,tp,pp,dp,micro_batch,global_batch,"
      "device,topology,measured_tflops_per_gpu\n"
      "full,,24,1024,16,50257,1024,1,1,1,1,1,8,A100-80GB,dgx-a100,150\n"
      "short,,24,1024,16,,1024,1,1,1,1,1,8,A100-80GB,dgx-a100,150\n",
      "runs.csv");
  EXPECT_EQ(table.measured_kind, MeasuredKind::kTflopsPerGpu);
  EXPECT_TRUE(table.rows[0].error.empty()) << table.rows[0].error;
  EXPECT_EQ(table.rows[0].hidden, 1024);
  EXPECT_NE(table.rows[1].error.find("vocab"), std::string::npos);
}

TEST(RunTable, TableErrorsNameTheColumn) {
  try {
    parse_run_table(
        "name,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,color,"
        "measured_iteration_s\n",
        "runs.csv");
    FAIL() << "unknown column accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "runs.csv");
    EXPECT_NE(error.problem().find("\"color\""), std::string::npos);
  }
  EXPECT_THROW(parse_run_table(kHeader.substr(0, kHeader.rfind(',')) + "\n", "runs.csv"),
               InputError);  // no measured column
  EXPECT_THROW(parse_run_table("name,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,"
                               "measured_iteration_s,measured_tflops_per_gpu\n",
                               "runs.csv"),
               InputError);  // two measured columns
  EXPECT_THROW(parse_run_table(kHeader + "a,g,m,8\n", "runs.csv"), InputError);  // short row
  EXPECT_THROW(parse_run_table(kHeader, "runs.csv"), InputError);                // no runs
  EXPECT_THROW(parse_run_table("", "runs.csv"), InputError);
}

}  // namespace
}  // namespace perfsim::validation
