#include "scenario/llm_stage_compiler.hpp"

#include <optional>
#include <utility>

#include "mpi_sim/engine/program_builder.hpp"
#include "scenario/folded_simulation.hpp"
#include "scenario/llm_pipeline_steps.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

// Takes the template's steps from the generator: instantiates each for the rank, compiles it,
// and notes its witnesses, its collectives' witnesses and its pipeline steps.
class StageCompileSink : public llm::TraceSink {
 public:
  StageCompileSink(const llm::ParallelConfig& parallel, int rank, int stage,
                   const engine::ProgramSources& sources)
      : parallel_(parallel), rank_(rank), stage_(stage), sources_(sources) {}

  void begin(const Trace& header) override {
    witnesses_.emplace(header, stage_);
    instance_.emplace(header, stage_, parallel_, rank_);
    builder_.emplace(instance_->header(), rank_, parallel_.world_size(), sources_);
  }

  void take(std::vector<Op>& ops, std::size_t first_position) override {
    witness_of_.clear();
    for (const Op& op : ops)  // the template's groups, before the rank's are substituted
      witness_of_.push_back(witnesses_->observe(op));
    instance_->substitute(ops);
    batch_.ops.swap(ops);  // the generator keeps the emptied vector's capacity
    batch_.reindex();
    const std::size_t first_op = builder_->ops().size();
    builder_->add(batch_, first_position);
    const engine::SimOpList& compiled = builder_->ops();
    for (std::size_t i = first_op; i < compiled.size(); ++i) {
      const std::size_t local = compiled.trace_position(i) - first_position;
      steps_.add(batch_.ops.at(local), i);
      if (compiled[i].collective)
        note_collective(compiled[i], first_position + local, witness_of_.at(local));
    }
    batch_.ops.swap(ops);
  }

  CompiledStageTemplate finish(const llm::TransformerConfig& model) {
    CompiledStageTemplate compiled;
    compiled.program = builder_->finish();
    steps_.mark(model, parallel_, stage_, compiled.program);
    compiled.witnesses = witnesses_->take();
    if (one_to_one_ && witnesses_->collectives() == compiled.program.coverage.collectives)
      compiled.role_of = std::make_shared<const std::vector<std::uint32_t>>(std::move(role_of_));
    return compiled;
  }

 private:
  // The program's next collective, compiled from template op `position` of witness `witness`.
  // Sharing the program needs each collective to be the one collective of its own template
  // op, in template order.
  void note_collective(const engine::SimOp& op, std::size_t position, int witness) {
    if (!one_to_one_)
      return;
    if (witness < 0 || (previous_position_ && *previous_position_ >= position) ||
        op.collective_index != role_of_.size()) {
      one_to_one_ = false;
      return;
    }
    previous_position_ = position;
    role_of_.push_back(static_cast<std::uint32_t>(witness));
  }

  const llm::ParallelConfig& parallel_;
  int rank_;
  int stage_;
  const engine::ProgramSources& sources_;
  std::optional<WitnessCollector> witnesses_;
  std::optional<llm::StreamedRankInstance> instance_;
  std::optional<engine::ProgramBuilder> builder_;
  Trace batch_;
  std::vector<int> witness_of_;  // per op of the batch
  PipelineStepRuns steps_;
  std::vector<std::uint32_t> role_of_;
  std::optional<std::size_t> previous_position_;
  bool one_to_one_ = true;
};

}  // namespace

CompiledStageTemplate compile_stage_template(const llm::TransformerConfig& model,
                                             const llm::ParallelConfig& parallel, int rank,
                                             const engine::ProgramSources& sources) {
  const int stage = llm::coordinates_of(parallel, rank).pp;
  StageCompileSink sink(parallel, rank, stage, sources);
  llm::generate_llm_stage_template(model, parallel, stage, sink);
  return sink.finish(model);
}

}  // namespace perfsim::scenario
