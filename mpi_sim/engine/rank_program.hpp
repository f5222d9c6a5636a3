#pragma once
// A rank's trace flattened for traversal: the top-level ops in execution order, each with the
// kernels it launches and their durations already chosen by the duration sources, its
// collective (group, index in group, members), whether it waits on communication, and the
// tensors it consumes. Building this once keeps the traversal loop free of lookups and lets
// collectives be checked across ranks before anything is simulated.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mpi_sim/engine/link_sharing.hpp"
#include "mpi_sim/engine/name_pool.hpp"
#include "perfsim/duration_source.hpp"
#include "perfsim/rank_result.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::engine {

// Names are views into the program's NamePool (RankProgram::names).
struct SimKernel {
  std::string_view name;
  StreamId stream = kDefaultComputeStream;
  KernelCategory category = KernelCategory::kOther;
  DurationUs duration_us = 0;
  std::string_view launch_api = "cudaLaunchKernel";
  bool is_collective = false;  // the slot where the op's collective runs
  bool host_waits = false;     // the CPU blocks until it ends (copy to pageable host memory)
  // Recorded host timing (replay of a profiled run): when its launch call began, after the
  // start of its top-level op, and how long the call took.
  std::optional<DurationUs> recorded_launch_offset_us;
  std::optional<DurationUs> recorded_launch_us;
};

// How a top-level op occupied the CPU in the profiled run, for a replay that keeps each op's
// own host time instead of per-op-name means. Blocking calls are split out: their waiting is
// simulated (the simulated GPU decides how long), everything else is replayed.
struct RecordedHostTiming {
  // Each CPU thread (main, autograd, data loader) has its own timeline: an op starts after the
  // previous op of its thread by the recorded gap, and no earlier than the previous op of any
  // thread by the recorded offset between their starts, so that a delay the simulation adds
  // (a longer wait for the GPU) carries over to what came after it in the profile.
  std::int64_t thread_id = 0;
  DurationUs thread_gap_us = 0;    // from the end of the previous op of its thread (or step start)
  DurationUs start_offset_us = 0;  // from the start of the previous op (or step start)
  DurationUs cpu_us = 0;           // the op's recorded duration
  std::optional<DurationUs> block_offset_us;  // start of its first blocking call, from op start
  DurationUs after_block_us = 0;              // from the end of that call to the op's end
};

// A blocking synchronization the op's host code performs after its launches.
enum class HostSync { kNone, kStream, kDevice };

// The ranks of a collective's group, ascending: one shared list per distinct group in a
// program, not a copy per collective (a 1024-rank world all-reduce repeated 20 times would
// otherwise hold 20 x 4 kB per rank).
class MemberList {
 public:
  MemberList() : ranks_(std::make_shared<const std::vector<int>>()) {}
  explicit MemberList(std::shared_ptr<const std::vector<int>> ranks) : ranks_(std::move(ranks)) {}
  const std::vector<int>& ranks() const { return *ranks_; }
  operator std::span<const int>() const { return *ranks_; }
  std::size_t size() const { return ranks_->size(); }
  bool empty() const { return ranks_->empty(); }
  int operator[](std::size_t i) const { return (*ranks_)[i]; }
  int front() const { return ranks_->front(); }
  std::vector<int>::const_iterator begin() const { return ranks_->begin(); }
  std::vector<int>::const_iterator end() const { return ranks_->end(); }
  friend bool operator==(const MemberList& a, const std::vector<int>& b) { return *a.ranks_ == b; }
  friend bool operator==(const MemberList& a, const MemberList& b) {
    return a.ranks_ == b.ranks_ || *a.ranks_ == *b.ranks_;
  }

 private:
  std::shared_ptr<const std::vector<int>> ranks_;
};

struct SimCollective {
  CommInfo comm;
  std::string group;  // key: ProcessGroup name, "" = world, "p2p:a->b" for send/recv
  std::size_t index_in_group = 0;
  MemberList members;          // global simulated ranks, ascending
  DurationUs duration_us = 0;  // this rank's candidate (see CollectivePost)
  DurationCombine combine = DurationCombine::kLongest;
  StreamId stream = kDefaultCommStream;
  std::vector<std::int64_t> produced_tensor_ids;  // buffers valid only after it ends
  std::optional<std::int64_t> seq;                // its work handle's sequence number
};

struct SimOp {
  std::size_t trace_position = 0;  // into Trace::ops
  // Its collective's place among the program's collectives (valid when `collective` is set):
  // where a rank that shares these ops finds its own group (RankProgram::collective_of).
  std::uint32_t collective_index = 0;
  std::string_view name;
  std::vector<SimKernel> kernels;  // launch order; a collective appears as one slot
  // Shared and immutable once built: most ops have none, and an inline optional would cost
  // every op the 240 bytes of a SimCollective (a 1024-rank LLM program has ~40 M ops).
  std::shared_ptr<const SimCollective> collective;
  bool waits_for_communication = false;  // c10d wait / Work.wait(): joins the last collective
  // The work handle it waits on, when the trace names it (execution-trace sequence number of
  // the collective, "comm_seq"): the wait joins that collective, not the most recent one.
  std::optional<std::int64_t> waits_for_seq;
  HostSync host_sync = HostSync::kNone;  // cudaStreamSynchronize / cudaDeviceSynchronize
  // Kernels the host queued before the trace began (Kineto: launched before profiling); they
  // occupy their streams from the start and cost the simulated CPU nothing.
  bool queued_before_trace = false;
  // A top-level op with several collectives becomes one SimOp per collective: the later
  // parts continue the first (no op-level overheads T1/T2), the earlier ones are continued
  // (no T3 and no host synchronization yet).
  bool continues_previous = false;
  bool continued_by_next = false;
  TimestampUs measured_start_us = 0;  // when the trace recorded it (0 when unknown)
  std::vector<std::int64_t> consumed_tensor_ids;
  std::shared_ptr<const RecordedHostTiming> recorded_host;  // set by replay_recorded_host
};

// Counts of what the program builder could not model, for the coverage report.
struct ProgramCoverage {
  std::size_t top_level_ops = 0;
  std::size_t ops_without_kernels = 0;
  std::size_t kernels = 0;
  std::size_t collectives = 0;
  std::size_t collectives_without_size = 0;         // no byte count in the trace: 0 bytes
  std::size_t comm_kernels_without_collective = 0;  // NCCL kernels no record names: measured
  // Collectives of a group smaller than the world whose members the trace does not list:
  // run on the whole world, so matched across every rank (may be wrong).
  std::size_t collectives_of_unlisted_groups = 0;
  std::map<std::string, std::size_t> unmodelled_ops;  // op name -> count
};

// A labelled run of consecutive ops whose GPU time the simulator reports (RankResult::steps).
struct ProgramStep {
  std::size_t first_op = 0;  // [first_op, end_op) in RankProgram::ops
  std::size_t end_op = 0;
  StepSpan label;  // its times unset
};

// The ops of a program, immutable once built and shared by copies: the ranks of one pipeline
// stage run one stage template's ops (generators/llm/llm_rank_roles.hpp) and differ only in
// their collectives' groups, so they hold one list between them (RankProgram::bound) instead of
// one each. Writing through mutable_ops() first copies a list that another program shares.
class SimOpList {
 public:
  SimOpList() : ops_(std::make_shared<std::vector<SimOp>>()) {}
  std::size_t size() const { return ops_->size(); }
  bool empty() const { return ops_->empty(); }
  const SimOp& operator[](std::size_t i) const { return (*ops_)[i]; }
  const SimOp& front() const { return ops_->front(); }
  const SimOp& back() const { return ops_->back(); }
  std::vector<SimOp>::const_iterator begin() const { return ops_->begin(); }
  std::vector<SimOp>::const_iterator end() const { return ops_->end(); }
  void push_back(SimOp op) { mutable_ops().push_back(std::move(op)); }
  std::vector<SimOp>& mutable_ops() {
    if (ops_.use_count() > 1)
      ops_ = std::make_shared<std::vector<SimOp>>(*ops_);
    return *ops_;
  }
  // True when both lists are one shared list.
  bool shares_with(const SimOpList& other) const { return ops_ == other.ops_; }

 private:
  std::shared_ptr<std::vector<SimOp>> ops_;
};

// A rank's own collectives when it runs ops compiled for another rank of its stage
// (bind_collectives in bound_program.hpp): the groups its collectives' roles name, and for
// every collective of the ops which role it plays and its index in the rank's group.
struct BoundGroup {
  std::string group;
  MemberList members;
  DurationUs duration_us = 0;  // this rank's candidate, as SimCollective::duration_us
};
struct CollectiveBinding {
  std::vector<BoundGroup> roles;  // tens: one per distinct (role, message) of the template
  // Per collective of the ops (SimOp::collective_index); shared by the ranks of a stage
  // where they agree.
  std::shared_ptr<const std::vector<std::uint32_t>> role_of;
  std::shared_ptr<const std::vector<std::uint32_t>> index_in_group;
};

// What a rank's collective is: the op's (kind, size, stream, buffers, combine) with the rank's
// own group, members, index in group and duration. For a bound program `shared.comm` names the
// compiled rank's process group and peer, and `shared.group` etc. are that rank's: read the
// fields here instead.
struct RankCollective {
  const SimCollective& shared;
  const std::string& group;
  const MemberList& members;
  std::size_t index_in_group = 0;
  DurationUs duration_us = 0;
};

struct RankProgram {
  int sim_rank = 0;
  // Where this rank's clocks start: 0, or its measured start skew for validation runs.
  TimestampUs start_us = 0;
  int world_size = 1;
  std::string source;
  SimOpList ops;
  // Set when `ops` were compiled for another rank of the same stage template: this rank's own
  // collectives; unset, each op's collective is this rank's.
  std::shared_ptr<const CollectiveBinding> binding;
  // `op`'s collective as this rank runs it (op.collective must be set).
  RankCollective collective_of(const SimOp& op) const {
    const SimCollective& shared = *op.collective;
    if (!binding)
      return {shared, shared.group, shared.members, shared.index_in_group, shared.duration_us};
    const BoundGroup& bound = binding->roles[(*binding->role_of)[op.collective_index]];
    return {shared, bound.group, bound.members, (*binding->index_in_group)[op.collective_index],
            bound.duration_us};
  }
  ProgramCoverage coverage;
  std::vector<ProgramStep> steps;  // ascending and disjoint; most programs have none
  // Owns the names the ops and kernels view; shared by copies of the program.
  std::shared_ptr<NamePool> names = std::make_shared<NamePool>();
  // Concurrent collectives share the rank's links by this rule (link_occupancy.hpp); unset:
  // each collective takes its duration alone.
  std::shared_ptr<const LinkSharingRule> link_sharing;
};

// Kernels for a top-level op that carries none (execution traces without a profiler trace),
// each with the duration its model predicted from the op that launches it (a descendant of the
// top-level op: an autograd wrapper's own rule cannot price its children's kernels).
// Returns an empty list when the op launches nothing or is unknown (then counted).
struct ExpandedKernel {
  Kernel kernel;
  DurationUs predicted_us = 0;
};
using KernelExpander =
    std::function<std::vector<ExpandedKernel>(const Trace&, std::size_t position)>;

struct ProgramSources {
  const KernelDurationSource* kernels = nullptr;      // required
  const CommDurationSource* communication = nullptr;  // required
  KernelExpander expand_kernels;                      // optional
};

struct ProgramOptions {
  // Walk only the top-level ops inside the trace's measured step (ProfilerStep window) when
  // it has one; ops outside belong to other iterations.
  bool measured_step_only = true;
  // Replay each op's recorded host time (gaps, launch offsets, launch durations) instead of
  // the per-op-name overhead means; needs a trace with host timing (Kineto).
  bool replay_recorded_host = false;
};

// `sim_rank` is the rank this trace plays; `world_size` the number of simulated ranks.
RankProgram build_rank_program(const Trace& trace, int sim_rank, int world_size,
                               const ProgramSources& sources, const ProgramOptions& options = {});

// A collective's identity for cross-rank matching: order, kind and size within its group.
struct CollectiveSignature {
  std::string group;
  std::size_t index_in_group = 0;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Bytes bytes = 0;  // compared for kinds whose size must agree on every member
  std::size_t op_position = 0;
  std::string op_name;
};
std::vector<CollectiveSignature> collective_signatures(const RankProgram& program);

}  // namespace perfsim::engine
