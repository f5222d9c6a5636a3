#pragma once
// Where a generator's ops go when they are not collected into one Trace: a consumer that
// compiles them as they come (scenario/llm_stage_compiler.hpp) holds one micro-batch step of
// generated ops at a time instead of a whole stage (~1.4 kB per op as a Trace: names,
// attributes, tensor lists). The generator hands over whole top-level ops in trace order.
#include <cstddef>
#include <vector>

#include "perfsim/trace.hpp"

namespace perfsim::generators::llm {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // The trace's fields other than its ops (source, format, rank, world size), once, before
  // any op.
  virtual void begin(const Trace& header) = 0;
  // The trace's next ops, `ops[i]` being op `first_position + i` of the whole trace. The sink
  // may move from them; the caller clears the vector afterwards.
  virtual void take(std::vector<Op>& ops, std::size_t first_position) = 0;
};

}  // namespace perfsim::generators::llm
