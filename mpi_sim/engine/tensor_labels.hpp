#pragma once
// The buffers by which a compiled op waits for a collective (SimOp::consumed_tensor_ids,
// SimCollective::produced_tensor_ids), renumbered so that repeated layers get repeated numbers.
//
// The traversal (rank_simulator.cpp) keeps, per tensor, the last collective that produced it:
// a collective posts its buffers in program order, and the first later op that consumes one
// waits for that collective and removes the entry; any other consumption waits for nothing.
// Which consumption waits for which collective is therefore fixed by the program order, and
// the builder replays that rule here: it keeps only the consumptions that wait, and gives each
// (producing collective, consuming op) pair a label, the smallest one whose previous pair
// ended at or before this collective. Pairs that are in flight at once get distinct labels, so
// the traversal, run on the labels, waits for exactly the collectives it waited for on the
// trace's tensor ids; and a generated trace, which gives every tensor a fresh id, now repeats
// its layers' labels, so that their ops are equal (op_interner.hpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace perfsim::engine {

class TensorLabels {
 public:
  // The collective of op `op_index` produces `tensor` into `produced` (its produced list, which
  // gets a label for each later consumption that waits on it; it must outlive the build).
  void produce(std::int64_t tensor, std::size_t op_index, std::vector<std::int64_t>& produced);
  // Op `op_index` consumes `tensor` before its own collective is posted: the label to wait on,
  // or nothing when the traversal would not wait.
  std::optional<std::int64_t> consume(std::int64_t tensor, std::size_t op_index);

 private:
  struct Producer {
    std::size_t op_index = 0;
    std::vector<std::int64_t>* produced = nullptr;
  };
  std::unordered_map<std::int64_t, Producer> producer_of_;
  std::vector<std::size_t> last_consumer_of_label_;
};

}  // namespace perfsim::engine
