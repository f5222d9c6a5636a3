#include "mpi_sim/engine/tensor_labels.hpp"

namespace perfsim::engine {

void TensorLabels::produce(std::int64_t tensor, std::size_t op_index,
                           std::vector<std::int64_t>& produced) {
  // A later production replaces an earlier one nobody consumed, as the traversal's entry does.
  producer_of_[tensor] = Producer{op_index, &produced};
}

std::optional<std::int64_t> TensorLabels::consume(std::int64_t tensor, std::size_t op_index) {
  const auto found = producer_of_.find(tensor);
  if (found == producer_of_.end())
    return std::nullopt;
  const Producer producer = found->second;
  producer_of_.erase(found);
  std::size_t label = 0;
  // A consumer at the producer's own op consumed before that op posted: no overlap.
  while (label < last_consumer_of_label_.size() &&
         last_consumer_of_label_[label] > producer.op_index)
    ++label;
  if (label == last_consumer_of_label_.size())
    last_consumer_of_label_.push_back(op_index);
  else
    last_consumer_of_label_[label] = op_index;
  producer.produced->push_back(static_cast<std::int64_t>(label));
  return static_cast<std::int64_t>(label);
}

}  // namespace perfsim::engine
