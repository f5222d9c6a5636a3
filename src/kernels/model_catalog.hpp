#pragma once
// Every kernel model perfsim has, with what it needs and where its numbers come from
// (`perfsim models`, STYLE.md item 5).
#include <string>
#include <vector>

namespace perfsim::kernels {

struct ModelDescription {
  std::string name;         // as it appears in predictions: "roofline", "analytical-gemm", ...
  std::string applies_to;   // kernels / ops
  std::string needs;        // inputs from the trace and the device file
  std::string data_source;  // seed and section, assets, or "estimate"
};

std::vector<ModelDescription> kernel_model_catalog();

}  // namespace perfsim::kernels
