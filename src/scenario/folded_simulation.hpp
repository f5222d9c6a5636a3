#pragma once
// `perfsim simulate --model ... --fold auto`: one representative per pipeline stage is
// simulated; every other rank is first proven to run its stage representative's program up
// to a renaming of process groups (mpi_sim/engine/rank_folding.hpp), and its result is the
// representative's under its own group names. Where the proof fails (a topology that places
// congruent groups differently, members of a group in other classes) the run falls back to
// simulating every rank and says why.
//
// Why the proof costs one stage's generation, not every rank's. The generator emits one
// template per pipeline stage with placeholder roles and a rank's trace is its stage template
// with the rank's own group names and neighbours substituted (generate_llm_rank does exactly
// that, for unfolded runs too; generators/llm/llm_rank_roles.hpp). So for ranks r and rep of
// one stage the traces are op for op the same except in the collectives' groups and peers. In
// their programs (engine/rank_program.hpp) the ops without a collective are therefore equal
// (names, kernels and kernel durations are functions of the op alone), and a collective op
// differs only in what its group is: its group name, members, index in group and duration.
// Those depend on the op's role label (group placeholder or peer placeholder, and send/recv
// direction) and its message, not on where in the program the op sits: the members and the
// name come from the role, the duration from the collective model, a function of the group's
// members, size, kind and bytes (collectives/collective_model.hpp), and the index in group is
// the count of earlier ops on the same group, equal on r and rep when r's group names
// correspond one to one to rep's (the renaming is a bijection). Hence comparing the programs
// of one op per distinct (role, message) of the template -- the stage's "witness collectives",
// tens of ops -- decides exactly what comparing the whole programs decides, and gives the same
// renaming. fold_consistency then checks the group congruence across all ranks as before.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "generators/llm/llm_parallel_config.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/rank_folding.hpp"
#include "scenario/llm_simulation.hpp"
#include "scenario/simulation_inputs.hpp"

namespace perfsim::scenario {

// The class of every rank: the (tp 0, cp 0, dp 0) rank of its pipeline stage.
std::vector<int> stage_representative_of(const generators::llm::ParallelConfig& parallel);

// One op per distinct collective of a stage template (by group or peer placeholder and
// message), in template order, collected op by op as the template streams by (trace_sink.hpp).
class WitnessCollector {
 public:
  // `template_header`: the template's source, format and world size (its ops are not read).
  WitnessCollector(const Trace& template_header, int stage);
  // The next template op's witness index (-1 without a collective); the first op of each
  // witness is copied (before its roles are substituted).
  int observe(const Op& op);
  // How many observed ops have a collective.
  std::size_t collectives() const { return collectives_; }
  generators::llm::StageTemplate take();

  // What a collective's group and duration can depend on: its role and its message.
  using Key = std::tuple<std::string, int, CollectiveKind, int, DType, Bytes, Bytes,
                         std::vector<std::int64_t>, std::vector<std::int64_t>, int, std::int64_t,
                         std::int64_t>;

 private:
  generators::llm::StageTemplate witnesses_;
  std::map<Key, int> index_of_key_;
  std::size_t collectives_ = 0;
};

// The representatives' programs (inputs.programs, stage order) and, per stage, the witness
// collectives and the representative's program of them.
struct FoldInputs {
  SimulationInputs inputs;
  std::vector<generators::llm::StageTemplate> witnesses;
  std::vector<engine::RankProgram> representative_witnesses;
};
FoldInputs load_fold_inputs(const LlmScenario& scenario);

// Builds each of `ranks`' program of its stage's witness collectives and compares it with its
// representative's.
struct FoldProof {
  std::vector<engine::GroupRenaming> renamings;
  std::vector<std::pair<int, std::string>> differences;
};
FoldProof prove_ranks(const LlmScenario& scenario, const FoldInputs& fold,
                      std::span<const int> representative_of, std::span<const int> ranks);

// Why folding is not exact for these proofs (renamings of every rank), or nothing.
std::optional<std::string> fold_refusal(const FoldProof& proof,
                                        std::span<const int> representative_of);

// Simulates the representatives with FoldedClockSync and expands to every rank (rank order).
// With `timeline_sink`, each rank's expanded timeline goes there as it is made and the results
// keep none, so the timelines of all ranks are never held at once.
std::vector<RankResult> simulate_folded(
    const SimulationInputs& representatives, std::span<const int> representative_of,
    std::span<const engine::GroupRenaming> renamings, bool record_timeline,
    const std::function<void(const RankResult&)>& timeline_sink = {});

// All of the above in this process (tests, and `simulate --fold`, which runs it on process 0).
struct FoldedRun {
  std::optional<std::string> refusal;  // set: not folded, results empty
  SimulationInputs inputs;             // the representatives'
  std::vector<RankResult> results;     // every rank
  std::size_t representatives = 0;
  double generation_s = 0;  // stage templates, representatives' and witnesses' programs
  double proof_s = 0;       // generation_s and proving every rank
  double simulation_s = 0;  // simulating the representatives and cloning their results
};
FoldedRun fold_in_process(const LlmScenario& scenario, bool record_timeline,
                          const std::function<void(const RankResult&)>& timeline_sink = {});

// The "fold: ..." line of the notes.
std::string fold_note(std::size_t representatives, int world_size);

}  // namespace perfsim::scenario
