#pragma once
// A rank's trace flattened for traversal: the top-level ops in execution order, each with the
// kernels it launches and their durations already chosen by the duration sources, its
// collective (group, index in group, members), whether it waits on communication, and the
// tensors it consumes. Building this once keeps the traversal loop free of lookups and lets
// collectives be checked across ranks before anything is simulated.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "mpi_sim/engine/link_sharing.hpp"
#include "mpi_sim/engine/name_pool.hpp"
#include "perfsim/duration_source.hpp"
#include "perfsim/rank_result.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::engine {

// Names are views into the program's NamePool (RankProgram::names). A member added to
// SimKernel or SimOp must be listed in op_interner.cpp's fields_of (the build fails until it
// is), which decides when two ops share one body.
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

// Where it came from in the trace is its list's (SimOpList::trace_position): equal ops of a
// program are stored once.
struct SimOp {
  // Its collective's place among the program's collectives (valid when `collective` is set):
  // where a rank that shares these ops finds its own group (RankProgram::collective_of).
  std::uint32_t collective_index = 0;
  std::string_view name;
  // The op's "phase" attribute (generated traces: forward, backward, recompute, loss, ...; ""
  // without one): host overheads may charge ops of a phase more or less CPU time
  // (HostOverheads::t1_delta_per_phase_us).
  std::string_view phase;
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
//
// Within a list, equal ops are stored once: a generated program repeats each layer's ops for
// every layer and micro-batch, so a stage of tens of thousands of ops has a few hundred
// distinct ones. The list keeps per op the index of its body and its trace position (8 bytes)
// and each distinct body once (an op with a collective or a recorded host timing is its own).
class SimOpList {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = SimOp;
    using difference_type = std::ptrdiff_t;
    using pointer = const SimOp*;
    using reference = const SimOp&;
    const_iterator() = default;
    const_iterator(const SimOpList* list, std::size_t index) : list_(list), index_(index) {}
    reference operator*() const { return (*list_)[index_]; }
    pointer operator->() const { return &(*list_)[index_]; }
    reference operator[](difference_type n) const { return (*list_)[index_ + n]; }
    const_iterator& operator++() { return ++index_, *this; }
    const_iterator operator++(int) { return {list_, index_++}; }
    const_iterator& operator--() { return --index_, *this; }
    const_iterator operator--(int) { return {list_, index_--}; }
    const_iterator& operator+=(difference_type n) { return index_ += n, *this; }
    const_iterator& operator-=(difference_type n) { return index_ -= n, *this; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return static_cast<difference_type>(a.index_) - static_cast<difference_type>(b.index_);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.index_ == b.index_;
    }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) {
      return a.index_ <=> b.index_;
    }

   private:
    const SimOpList* list_ = nullptr;
    std::size_t index_ = 0;
  };

  SimOpList() : storage_(std::make_shared<Storage>()) {}
  std::size_t size() const { return storage_->body_of.size(); }
  bool empty() const { return storage_->body_of.empty(); }
  const SimOp& operator[](std::size_t i) const { return storage_->bodies[storage_->body_of[i]]; }
  const SimOp& front() const { return (*this)[0]; }
  const SimOp& back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }
  // Where op `i` came from in its trace (Trace::ops).
  std::size_t trace_position(std::size_t i) const { return storage_->trace_positions[i]; }
  // Appends an op with a body of its own.
  void push_back(SimOp op, std::size_t trace_position) {
    append(add_body(std::move(op)), trace_position);
  }
  // Adds a distinct body (its index) and appends an op that uses a body already added.
  std::uint32_t add_body(SimOp op) {
    Storage& storage = mutable_storage();
    storage.bodies.push_back(std::move(op));
    return static_cast<std::uint32_t>(storage.bodies.size() - 1);
  }
  const SimOp& body(std::uint32_t index) const { return storage_->bodies[index]; }
  // Which distinct op (body) op `i` is.
  std::uint32_t body_index(std::size_t i) const { return storage_->body_of[i]; }
  void append(std::uint32_t body, std::size_t trace_position) {
    Storage& storage = mutable_storage();
    storage.body_of.push_back(body);
    storage.trace_positions.push_back(static_cast<std::uint32_t>(trace_position));
  }
  // Gives back the capacity the appends left unused (once the list is complete).
  void shrink_to_fit() {
    Storage& storage = mutable_storage();
    storage.bodies.shrink_to_fit();
    storage.body_of.shrink_to_fit();
    storage.trace_positions.shrink_to_fit();
  }
  // The distinct ops, each once: writing to one writes every op of the list that is equal to
  // it (a change that applies to every op alike, such as scaling GEMM times, applies once).
  std::vector<SimOp>& mutable_ops() { return mutable_storage().bodies; }
  std::size_t distinct_ops() const { return storage_->bodies.size(); }
  // True when both lists are one shared list.
  bool shares_with(const SimOpList& other) const { return storage_ == other.storage_; }

 private:
  struct Storage {
    std::vector<SimOp> bodies;
    std::vector<std::uint32_t> body_of;
    std::vector<std::uint32_t> trace_positions;
  };
  Storage& mutable_storage() {
    if (storage_.use_count() > 1)
      storage_ = std::make_shared<Storage>(*storage_);
    return *storage_;
  }
  std::shared_ptr<Storage> storage_;
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

// Calls visit(group, members) once per group string the program's collectives name. A program
// names a few group strings (held by its ops or its binding) many times over: they are told
// apart by address, so a string is looked at once, not once per collective; two strings of
// equal text at different addresses are both visited.
template <class Visit>
void for_each_collective_group(const RankProgram& program, Visit&& visit) {
  std::unordered_set<const std::string*> seen;
  const std::string* last = nullptr;  // consecutive collectives mostly share their group
  for (const SimOp& op : program.ops) {
    if (!op.collective)
      continue;
    const RankCollective collective = program.collective_of(op);
    if (&collective.group == last)
      continue;
    last = &collective.group;
    if (seen.insert(last).second)
      visit(collective.group, collective.members);
  }
}

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
// CollectiveSignature::bytes of a collective: its size where every member must agree on it, 0
// for the kinds whose sizes legitimately differ per member (all-to-all(v), point-to-point).
Bytes signature_bytes(const CommInfo& comm);

}  // namespace perfsim::engine
