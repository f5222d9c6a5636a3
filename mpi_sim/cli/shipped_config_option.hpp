#pragma once
// Config arguments (--model, --topology, --dlrm) take a file or the name of a shipped config, so
// `--model gpt-oss-120b --topology hgx-h100-8node` works from any directory as it does in a
// RUNS.csv row and in `perfsim plan`.
#include <CLI/CLI.hpp>

namespace perfsim::cli {

// A CLI11 transform: a value that is neither an existing path nor a *.json name becomes
// <source>/configs/<folder>/<value>.json (scenario/config_path.hpp); other values pass unchanged.
CLI::Validator shipped_config(const char* folder);

}  // namespace perfsim::cli
