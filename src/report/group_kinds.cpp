#include "report/group_kinds.hpp"

#include <cctype>

namespace perfsim::report {

std::string group_kind(const std::string& group) {
  std::string kind = group.substr(0, group.find_first_of("/:"));
  for (char& c : kind) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      c = '_';
  }
  return kind.empty() ? "world" : kind;
}

std::string group_kind_label(const std::string& kind) {
  if (kind == "tp")
    return "tensor-parallel";
  if (kind == "cp")
    return "context-parallel";
  if (kind == "ep")
    return "expert-parallel";
  if (kind == "edp")
    return "expert-data-parallel";
  if (kind == "etpp")
    return "expert-model-parallel";
  if (kind == "dp")
    return "data-parallel";
  if (kind == "pp")
    return "pipeline-group";
  if (kind == "mp")
    return "model-parallel";
  if (kind == "dopt")
    return "job-wide";
  if (kind == "tpdp")
    return "tensor x data x context parallel";  // FP8 amax history, MoE router bias
  if (kind == "emb")
    return "embedding-group";  // first and last stage: a tied embedding's gradients
  if (kind == "p2p")
    return "pipeline p2p";
  return kind;
}

}  // namespace perfsim::report
