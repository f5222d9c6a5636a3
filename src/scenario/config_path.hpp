#pragma once
// A config argument on the command line or in a run table: a file path, or a name in the
// source tree's configs/<folder>/<name>.json (`korthikanti-175b`, `dgx-a100-8node`).
//
// A name is matched against the folder's file names first exactly, then ignoring case, then
// by io::name_key (`Llama 3 70B`, `LLAMA3_70B`), and last against the names a
// file lists under "aliases" (`Meta-Llama-3.1-70B` for llama3-70b), compared the same way; a
// Hugging Face id's organization (`meta-llama/...`) is dropped first. A name two files answer
// to is an error naming both, never a silent pick.
#include <string>

namespace perfsim::scenario {

std::string config_path(const std::string& name_or_file, const char* folder);

}  // namespace perfsim::scenario
