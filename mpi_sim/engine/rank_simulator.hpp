#pragma once
// The per-rank critical-path traversal: seed 000 Algorithm 3 (single GPU, host overheads
// T1..T5) extended as in seed 001 Algorithm 1 / seed 000 Algorithm 4 to one clock per stream,
// intra-rank synchronization (waits and tensors produced by collectives) and inter-rank
// synchronization through ClockSync. The traversal is resumable: advance() runs until the
// next op needs a collective that has not resolved yet, so many simulated ranks can share one
// thread and no rank blocks on a collective it does not need yet.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mpi_sim/engine/clock_sync.hpp"
#include "mpi_sim/engine/fifo_buffer.hpp"
#include "mpi_sim/engine/host_cost_cache.hpp"
#include "mpi_sim/engine/link_occupancy.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "perfsim/host_overheads.hpp"
#include "perfsim/rank_result.hpp"

namespace perfsim::engine {

class RankSimulator {
 public:
  RankSimulator(const RankProgram& program, const HostOverheads& overheads, ClockSync& sync,
                bool record_timeline = false);
  // The simulator keeps references to its program and overheads: temporaries would dangle.
  RankSimulator(RankProgram&&, const HostOverheads&, ClockSync&, bool = false) = delete;
  RankSimulator(const RankProgram&, HostOverheads&&, ClockSync&, bool = false) = delete;

  enum class Progress { kBlocked, kFinished };
  // Runs until finished or blocked on an unresolved collective.
  Progress advance();
  bool finished() const { return finished_; }
  // Grows whenever the traversal moves (an op ran or a collective resolved).
  std::size_t progress_count() const { return next_op_ + resolved_count_; }
  // Top-level ops run so far and in all (for progress reports).
  std::size_t ops_run() const { return next_op_; }
  std::size_t ops_total() const { return program_.ops.size(); }
  // Which collective blocks this rank (for deadlock reports).
  std::string blocked_on() const;
  // The collective that blocks this rank after advance() returned kBlocked: the scheduler
  // parks the rank until the ClockSync reports it resolved.
  CollectiveHandle blocked_handle() const { return posted(*blocked_posted_).handle; }
  // Posted-collective records held now (tests: a long program holds few).
  std::size_t posted_records_held() const { return posted_.size() + kept_posted_.size(); }
  // Valid once finished().
  RankResult result() const;
  // The result, moved out (the simulator's copy is left empty): a caller that gathers every
  // rank's result does not hold each twice.
  RankResult take_result() {
    traffic_slots_.reset();  // would point into the moved-out map
    return std::move(result_);
  }

 private:
  static constexpr TimestampUs kUnresolved = std::numeric_limits<TimestampUs>::quiet_NaN();
  // No posted collective (a stream that waits on none, a kernel's pending busy entry).
  static constexpr std::size_t kNotPosted = static_cast<std::size_t>(-1);
  // One per collective the rank posted, held while anything may still read it (see posted_):
  // kept to 32 bytes; its group, index and slot are read from the op
  // (RankProgram::collective_of) when needed, which is once or twice per collective.
  struct Posted {
    CollectiveHandle handle;
    const SimOp* op = nullptr;
    // NaN until the collective resolves (an optional would cost every entry 8 bytes more).
    CollectiveTiming timing{kUnresolved, kUnresolved};
    bool has_timing() const { return !std::isnan(timing.start_us); }
  };
  // The op's collective slot: the stream the collective runs on and its kernel name.
  static const SimKernel& slot_of(const Posted& posted);
  struct StreamState {
    TimestampUs clock_us = 0;
    std::size_t pending = kNotPosted;  // posted collective the stream waits on
    DurationUs busy_us = 0;
    CategoryTimes by_category_us{};
  };

  bool resolved(std::size_t posted_index);
  // The posted collectives op `op` needs before it may run, into `needed` (cleared first).
  void requirements(const SimOp& op, std::vector<std::size_t>& needed) const;
  std::vector<std::size_t> needed_;  // advance()'s requirements, reused from op to op
  void run_op(const SimOp& op);
  void apply_host_sync(const SimOp& op);
  void run_recorded_op(const SimOp& op);
  // Launches one kernel (or posts the op's collective) with a launch call of t4 from now.
  void launch_kernel(const SimOp& op, const SimKernel& kernel, DurationUs t4);
  void wait_on_stream(StreamId stream, std::size_t posted_index);
  // result_.groups[group], remembered by the address of the group's name in the program (a
  // RankCollective's group, which lives as long as the program) instead of string compares down
  // the map at every collective. A rank of a bound program names a few tens of group strings
  // (one per role), a compiled one one per collective op (each looked up about three times):
  // a small direct-mapped cache serves both, allocated at the first collective. Map nodes never
  // move, so the pointers stay valid until the result is taken.
  GroupTraffic& group_traffic(const std::string& group);
  struct TrafficSlot {
    const std::string* name = nullptr;
    GroupTraffic* traffic = nullptr;
  };
  static constexpr std::size_t kTrafficSlots = 16;
  using TrafficSlots = std::array<TrafficSlot, kTrafficSlots>;
  std::unique_ptr<TrafficSlots> traffic_slots_;
  // The duration this rank posts for a collective ready at `ready_us`: alone, or shared with
  // its collectives in flight on the same links (program_.link_sharing).
  DurationUs posted_duration_us(const RankCollective& collective, TimestampUs ready_us);
  // The stream's state, added (its clock at the program's start) on first use. A reference is
  // valid until the next call for a stream not used before: streams_ is a vector.
  StreamState& stream_state(StreamId id) {
    // Most calls ask for the stream asked for last (a kernel's stream, then its clock again).
    if (last_stream_ < streams_.size() && streams_[last_stream_].first == id)
      return streams_[last_stream_].second;
    return other_stream_state(id);
  }
  StreamState& other_stream_state(StreamId id);
  void add_busy(StreamId stream, TimestampUs start_us, DurationUs duration_us,
                KernelCategory category, std::string_view name, const std::string& key);
  // Busy time enters the sums in launch order, a collective's once it resolves and what was
  // launched after it behind it: floating-point sums then do not depend on how the traversal
  // interleaves ranks, so folded, in-process and MPI runs agree bit for bit.
  // Kernels launched after a collective that has not resolved yet wait here: a whole pipeline
  // bubble's worth on a blocked stage, so kept to 24 bytes.
  struct PendingBusy {
    const SimKernel* kernel = nullptr;  // stream, category and name (unused for a collective)
    TimestampUs start_us = 0;
    std::size_t posted = kNotPosted;  // a collective: its timing decides
  };
  void add_kernel_busy(const SimKernel& kernel, TimestampUs start_us);
  void flush_busy();
  FifoBuffer<PendingBusy> pending_busy_;
  // Widens the labelled step (RankProgram::steps) holding the op being run to cover a kernel.
  void note_step_kernel(TimestampUs start_us, TimestampUs end_us);
  std::size_t step_cursor_ = 0;  // the first step not yet behind the op being run

  const RankProgram& program_;
  const HostOverheads& overheads_;
  HostCostCache host_costs_{overheads_};  // overheads_ by name, looked up once per name
  ClockSync& sync_;
  bool record_timeline_;

  std::size_t next_op_ = 0;
  bool finished_ = false;
  std::optional<std::size_t> blocked_posted_;
  std::size_t resolved_count_ = 0;
  TimestampUs cpu_us_ = 0;
  // The replay of recorded host timing (RankProgram ops with recorded_host): allocated for
  // such programs only, as 65,536 synthetic ranks would otherwise carry 80 bytes each.
  struct RecordedReplay {
    TimestampUs op_start_us = 0;        // simulated start of the current recorded op
    TimestampUs previous_start_us = 0;  // simulated start of the previous recorded op
    TimestampUs cpu_end_us = 0;         // latest end of any thread's recorded op
    std::unordered_map<std::int64_t, TimestampUs> thread_end_us;
  };
  std::unique_ptr<RecordedReplay> recorded_;
  StreamId compute_stream_ = kDefaultComputeStream;
  // Ascending by id. A rank uses two or three streams: a vector searched in order holds them in
  // 72 bytes each, a map in a 128-byte node each.
  std::vector<std::pair<StreamId, StreamState>> streams_;
  std::size_t last_stream_ = 0;  // index in streams_ of the stream stream_state found last
  const StreamState* find_stream(StreamId id) const;
  // The posted collectives by index in posting order: [posted_base_, posted_end()) in posted_,
  // and before posted_base_ only those still named (by a buffer not yet consumed, or as the
  // last collective a wait op joins) in kept_posted_, ascending. Once half the window has
  // resolved, the resolved part goes (drop_resolved_posts), so a rank holds the collectives in
  // flight and those whose buffers are still to be consumed rather than one record per
  // collective of its program (20 per synthetic rank x 65,536 ranks; one per collective per
  // rank of an unfolded LLM run).
  std::vector<Posted> posted_;
  std::size_t posted_base_ = 0;
  std::vector<std::pair<std::size_t, Posted>> kept_posted_;
  Posted& posted(std::size_t index);
  const Posted& posted(std::size_t index) const;
  std::size_t posted_end() const { return posted_base_ + posted_.size(); }
  // Appends a record (its index): makes room by dropping the resolved records nothing names, or
  // else by growing the window, never past what the rest of the program can post.
  std::size_t add_posted(const Posted& entry);
  bool drop_resolved_posts();
  // Every posted collective before this index has resolved: a device synchronize and the end of
  // the program scan from here rather than from the first (a synchronize per pipeline transfer
  // made the scans quadratic in the program's collectives). Advanced lazily, hence mutable.
  mutable std::size_t first_unresolved_ = 0;
  std::size_t first_unresolved() const;
  std::optional<std::size_t> last_collective_;
  // Work handle -> posted (execution traces name the work a wait joins): allocated at the first
  // collective with a sequence number; its entries are never dropped, and while it holds any the
  // posted records are kept.
  std::unique_ptr<std::unordered_map<std::int64_t, std::size_t>> posted_by_seq_;
  // The collective op `op` waits on: its work handle's, else the most recent one.
  std::optional<std::size_t> waited_collective(const SimOp& op) const;
  // Tensor label -> posted, for buffers a later op waits on (tensor_labels.hpp: a compiled
  // program keeps only the consumptions that wait, and each entry goes when it is consumed),
  // so a few entries, searched in order: an unordered map kept a bucket array per rank.
  using TensorProducers = std::vector<std::pair<std::int64_t, std::size_t>>;
  TensorProducers tensor_producer_;
  // The position of `tensor`'s entry in tensor_producer_, or its size when it has none.
  std::size_t find_producer(std::int64_t tensor) const;
  // GPU busy time is the union of the kernels' intervals, summed in ascending (start, end)
  // order. Intervals wait here until none can come before them any more; sweep_busy then adds
  // them in that order, so the sum is the very one sorting every interval at the end gives,
  // while the rank holds only the intervals of the last stretch instead of one per kernel.
  std::vector<std::pair<TimestampUs, TimestampUs>> busy_intervals_;
  DurationUs busy_swept_us_ = 0;
  TimestampUs busy_covered_until_us_ = 0;
  // Small: a sweep sorts what is waiting, so a stretch costs the same per interval whatever its
  // length, and 65,536 synthetic ranks of 40 kernels each would otherwise hold every interval
  // (1 kB per rank) to the end. Which intervals a sweep takes does not change the sum (those
  // before the bound, in order), only when they are added.
  static constexpr std::size_t kMinSweep = 8;
  std::size_t next_sweep_size_ = kMinSweep;
  // Early sweeps need every later interval to start at or after the CPU clock of its launch
  // and that clock never to go back: no recorded host replay, no negative overheads.
  bool sweep_early_ = false;
  // A lower bound on the start of every interval of a kernel or collective not launched yet:
  // the CPU clock, or the earliest stream clock when that is later (a synthetic or trace
  // replay without host overheads never moves the CPU clock, and would sweep nothing).
  TimestampUs later_launches_start_from() const;
  std::size_t program_streams_ = 0;    // streams the program's kernels can use
  bool streams_bound_starts_ = false;  // no negative kernel duration: stream clocks never go back
  // A lower bound on the start of every interval still pending: the least of their start
  // times (kernels) and ready times (collectives) since pending_busy_ was last empty.
  TimestampUs pending_from_us_ = 0;
  // Adds the intervals that start before `bound` (sorted) to the sum.
  void sweep_busy(TimestampUs bound);
  // Frees what only the traversal reads, once the result is complete.
  void release_traversal_state();
  // End times of launched kernels the device has not finished at the CPU's clock (the launch
  // queue), earliest first.
  std::priority_queue<TimestampUs, std::vector<TimestampUs>, std::greater<>> queued_ends_;
  bool track_launch_queue_ = false;  // the program launches more kernels than the queue holds
  // Blocks the CPU until the launch queue has room (returns the CPU clock then).
  void wait_for_launch_slot();
  bool share_links_ = false;  // program_.link_sharing is set
  // Only where links are shared: 128 bytes that 65,536 synthetic ranks would otherwise carry.
  std::unique_ptr<LinkOccupancy> link_occupancy_;
  RankResult result_;
};

}  // namespace perfsim::engine
