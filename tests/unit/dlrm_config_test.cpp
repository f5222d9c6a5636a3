// DLRM configs: the shipped files parse, errors name the JSON pointer, sampled tables follow
// the heavy-table shares of seed 001 Sec. III-A (103 of 856 tables with L >= 20 in the 2021
// data, 166 of 788 in 2022), overrides resample or resize the table list.
#include <gtest/gtest.h>

#include "generators/dlrm/dlrm_config.hpp"
#include "generators/dlrm/dlrm_table_sampler.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::dlrm {
namespace {

const std::string kRoot = PERFSIM_SOURCE_DIR;

std::string minimal(const std::string& tables) {
  return R"({"schema": "perfsim-dlrm/1", "name": "m", "ranks": 2, "batch_per_gpu": 4,
             "dense_features": 3, "bottom_mlp": [8, 4], "top_mlp": [8, 1], )" +
         tables + "}";
}

InputError parse_error(const std::string& text) {
  try {
    parse_dlrm_config(text, "x.json");
  } catch (const InputError& error) {
    return error;
  }
  ADD_FAILURE() << "no InputError for " << text;
  return InputError("", "", "");
}

TEST(DlrmConfig, ShippedConfigsParse) {
  const DlrmConfig param = load_dlrm_config(kRoot + "/configs/dlrm/dlrm-param-8xv100.json");
  EXPECT_EQ(param.ranks, 8);
  EXPECT_EQ(param.tables.size(), 26u);
  EXPECT_EQ(param.batch_per_gpu, 16);
  EXPECT_EQ(param.top_mlp_input(), 367);  // the fixture's top MLP input width
  const DlrmConfig small = load_dlrm_config(kRoot + "/configs/dlrm/dlrm-small-4gpu.json");
  EXPECT_EQ(small.ranks, 4);
  EXPECT_EQ(small.tables.size(), 52u);
  ASSERT_TRUE(small.table_generator.has_value());
  const DlrmConfig heavy = load_dlrm_config(kRoot + "/configs/dlrm/dlrm-heavy-4gpu.json");
  for (const EmbeddingTable& table : heavy.tables)
    EXPECT_GE(table.pooling_factor, 20.0) << table.name;
  EXPECT_EQ(heavy.memory_cap_bytes, 32'000'000'000LL);
}

TEST(DlrmConfig, ErrorsNameTheJsonPointer) {
  EXPECT_EQ(parse_error(minimal(R"("tables": [{"rows": 10, "pooling_factor": 1}, {"rows": 10,
                                   "dim": 8, "pooling_factor": 1}])"))
                .location(),
            "/tables/1/dim");
  EXPECT_EQ(parse_error(minimal(R"("tables": [{"rows": -1, "pooling_factor": 1}])")).location(),
            "/tables/0/rows");
  EXPECT_EQ(parse_error(minimal(R"("tables": [{"rows": 3}])")).location(),
            "/tables/0/pooling_factor");
  EXPECT_EQ(parse_error(minimal(R"("tables": [], "table_generator": {}, "x": 1)")).location(),
            "/tables");
  EXPECT_EQ(parse_error(minimal(R"("table_generator": {"count": 3, "seed": 1, "pooling": "zipf"})"))
                .location(),
            "/table_generator/pooling");
  EXPECT_EQ(parse_error(R"({"schema": "perfsim-dlrm/1", "name": "m", "ranks": 2,
                            "batch_per_gpu": 4, "dense_features": 3, "bottom_mlp": [8, 0],
                            "top_mlp": [1], "tables": [{"rows": 3, "pooling_factor": 1}]})")
                .location(),
            "/bottom_mlp/1");
  EXPECT_EQ(parse_error(R"({"schema": "perfsim-dlrm/1", "name": "m", "ranks": 2,
                            "batch_per_gpu": 4, "dense_features": 3, "bottom_mlp": [4],
                            "top_mlp": [8, 2], "tables": [{"rows": 3, "pooling_factor": 1}]})")
                .location(),
            "/top_mlp");  // the last layer is the click probability
  EXPECT_EQ(parse_error("{").file(), "x.json");
}

TEST(DlrmConfig, SampledTablesFollowTheHeavyShareOfFigureThree) {
  for (PoolingProfile profile : {PoolingProfile::kDlrm2021, PoolingProfile::kDlrm2022}) {
    TableSamplerSpec spec;
    spec.count = 20000;
    spec.seed = 3;
    spec.dim = 16;
    spec.profile = profile;
    const std::vector<EmbeddingTable> tables = sample_tables(spec);
    int heavy = 0, below_one = 0;
    for (const EmbeddingTable& table : tables) {
      heavy += table.pooling_factor >= 20.0;
      below_one += table.pooling_factor < 1.0;
      EXPECT_GE(table.rows, spec.rows_min);
      EXPECT_LE(table.rows, spec.rows_max);
    }
    const double expected = profile == PoolingProfile::kDlrm2021 ? 103.0 / 856.0 : 166.0 / 788.0;
    EXPECT_NEAR(heavy / 20000.0, expected, 0.01) << pooling_profile_name(profile);
    EXPECT_GT(below_one, heavy);                               // "especially [0, 1]"
    EXPECT_EQ(sample_tables(spec)[17].rows, tables[17].rows);  // seeded
  }
}

TEST(DlrmConfig, OverridesResampleOrResizeTables) {
  const DlrmConfig small = load_dlrm_config(kRoot + "/configs/dlrm/dlrm-small-4gpu.json");
  DlrmOverrides overrides;
  overrides.tables = 10;
  overrides.batch_per_gpu = 64;
  overrides.ranks = 2;
  const DlrmConfig resized = apply_overrides(small, overrides);
  EXPECT_EQ(resized.tables.size(), 10u);
  EXPECT_EQ(resized.batch_per_gpu, 64);
  EXPECT_EQ(resized.ranks, 2);
  overrides = {};
  overrides.seed = 99;
  const DlrmConfig reseeded = apply_overrides(small, overrides);
  EXPECT_EQ(reseeded.tables.size(), small.tables.size());
  EXPECT_NE(reseeded.tables[0].rows, small.tables[0].rows);

  const DlrmConfig param = load_dlrm_config(kRoot + "/configs/dlrm/dlrm-param-8xv100.json");
  overrides = {};
  overrides.tables = 30;
  const DlrmConfig repeated = apply_overrides(param, overrides);
  ASSERT_EQ(repeated.tables.size(), 30u);
  EXPECT_EQ(repeated.tables[26].name, "t0~1");
  EXPECT_EQ(repeated.tables[26].rows, param.tables[0].rows);
  overrides.tables = 3;
  EXPECT_EQ(apply_overrides(param, overrides).tables.size(), 3u);
}

}  // namespace
}  // namespace perfsim::generators::dlrm
