#pragma once
// Names of the tensor arguments of an op from its TorchScript schema (the execution trace's
// op_schema attribute), matched to the op's tensor inputs. The trace keeps tensors only (an
// absent optional tensor leaves no entry), so the match is made only when it is certain: no
// tensor-list arguments, and the number of tensors equals the number of plain Tensor arguments
// (every Tensor? absent) or of all Tensor and Tensor? arguments (every one present).
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::memory {

// One name per input tensor, in order; empty when the schema cannot be matched.
std::vector<std::string> tensor_argument_names(std::string_view schema,
                                               std::size_t input_tensor_count);

// True for argument names fused optimizers give their state: momentum*, exp_avg*,
// *optimizer_state*, ... (fbgemm split_embedding_codegen_lookup_*_function, fused Adam).
bool is_optimizer_state_argument(std::string_view argument_name);

}  // namespace perfsim::memory
