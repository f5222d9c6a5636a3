#include "mpi_sim/engine/program_builder.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "mpi_sim/engine/op_interner.hpp"
#include "mpi_sim/engine/tensor_labels.hpp"
#include "perfsim/error.hpp"

namespace perfsim::engine {
namespace {

bool contains_wait(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("wait") != std::string::npos;
}

// A wait on communication: c10d/aten wait ops, "..._Wait" ops of torchrec, and chakra
// record_param_comms records whose collective_name is "wait".
bool is_wait_op(const Trace& trace, std::size_t position) {
  const Op& op = trace.ops[position];
  if (contains_wait(op.name))
    return true;
  std::vector<std::size_t> stack{position};
  while (!stack.empty()) {
    const Op& current = trace.ops[stack.back()];
    stack.pop_back();
    if (current.find_attribute("comm_wait") != nullptr)
      return true;  // the execution-trace loader's mark on wait records
    if (const Attribute* name = current.find_attribute("collective_name")) {
      if (const auto* text = std::get_if<std::string>(&name->value); text && *text == "wait") {
        return true;
      }
    }
    for (std::int64_t child : current.child_ids) {
      std::ptrdiff_t child_position = trace.position_of(child);
      if (child_position >= 0)
        stack.push_back(static_cast<std::size_t>(child_position));
    }
  }
  return false;
}

std::optional<std::int64_t> integer_attribute(const Op& op, std::string_view name) {
  if (const Attribute* attribute = op.find_attribute(name)) {
    if (const auto* value = std::get_if<std::int64_t>(&attribute->value))
      return *value;
  }
  return std::nullopt;
}

// The sequence number of the work a wait op waits on (execution traces: its wait record).
std::optional<std::int64_t> waited_seq(const Trace& trace, std::size_t position) {
  std::vector<std::size_t> stack{position};
  while (!stack.empty()) {
    const Op& op = trace.ops[stack.back()];
    stack.pop_back();
    if (op.find_attribute("comm_wait") != nullptr)
      return integer_attribute(op, "comm_seq");
    for (std::int64_t child : op.child_ids) {
      std::ptrdiff_t child_position = trace.position_of(child);
      if (child_position >= 0)
        stack.push_back(static_cast<std::size_t>(child_position));
    }
  }
  return std::nullopt;
}

// The strongest blocking synchronization among the runtime calls of the op's subtree.
HostSync host_sync_of(const Trace& trace, std::size_t position) {
  HostSync sync = HostSync::kNone;
  std::vector<std::size_t> stack{position};
  while (!stack.empty()) {
    const Op& op = trace.ops[stack.back()];
    stack.pop_back();
    for (const RuntimeCall& call : op.runtime_calls) {
      if (call.name == "cudaDeviceSynchronize")
        return HostSync::kDevice;
      if (is_blocking_runtime_call(call.name))
        sync = HostSync::kStream;
    }
    for (std::int64_t child : op.child_ids) {
      std::ptrdiff_t child_position = trace.position_of(child);
      if (child_position >= 0)
        stack.push_back(static_cast<std::size_t>(child_position));
    }
  }
  return sync;
}

// Every op of the subtree rooted at `position` that owns a collective, in execution order.
std::vector<const Op*> comm_ops_under(const Trace& trace, std::size_t position) {
  std::vector<const Op*> found;
  std::vector<std::size_t> stack{position};
  while (!stack.empty()) {
    const Op& op = trace.ops[stack.back()];
    stack.pop_back();
    if (op.comm)
      found.push_back(&op);
    for (auto child = op.child_ids.rbegin(); child != op.child_ids.rend(); ++child) {
      std::ptrdiff_t child_position = trace.position_of(*child);
      if (child_position >= 0)
        stack.push_back(static_cast<std::size_t>(child_position));
    }
  }
  return found;
}

// A top-level op cut before each of its collectives after the first: the engine runs one
// collective per SimOp, and a compiled backward may issue hundreds.
struct OpSegment {
  std::vector<const Kernel*> kernels;  // launch order
  const Op* comm_op = nullptr;
  std::unordered_map<const Kernel*, const Op*> kernel_owner;  // comm kernels -> their comm op

  const Op* owner_of(const Kernel* kernel) const {
    auto it = kernel_owner.find(kernel);
    return it == kernel_owner.end() ? nullptr : it->second;
  }
};

// The comm op a communication kernel belongs to: the nearest op with a CommInfo among the op
// that launched it and that op's ancestors up to the top-level op.
const Op* comm_op_of_launcher(const Trace& trace, std::size_t launcher, std::size_t top) {
  for (std::ptrdiff_t current = static_cast<std::ptrdiff_t>(launcher); current >= 0;) {
    const Op& op = trace.ops[static_cast<std::size_t>(current)];
    if (op.comm)
      return &op;
    if (static_cast<std::size_t>(current) == top || op.parent_id == kNoParent)
      break;
    current = trace.position_of(op.parent_id);
  }
  return nullptr;
}

std::vector<OpSegment> split_by_collective(const Trace& trace, std::size_t position,
                                           const std::vector<const Kernel*>& kernels) {
  const std::vector<const Op*> comm_ops = comm_ops_under(trace, position);
  // Which op launched each kernel matters only when there are collectives to tell apart
  // (generated traces have ~40 M top-level ops with at most one).
  std::unordered_map<const Kernel*, std::size_t> launcher;
  if (comm_ops.size() > 1) {
    std::vector<std::size_t> stack{position};
    while (!stack.empty()) {
      const std::size_t current = stack.back();
      stack.pop_back();
      for (const Kernel& kernel : trace.ops[current].kernels)
        launcher.emplace(&kernel, current);
      for (std::int64_t child : trace.ops[current].child_ids) {
        std::ptrdiff_t child_position = trace.position_of(child);
        if (child_position >= 0)
          stack.push_back(static_cast<std::size_t>(child_position));
      }
    }
  }
  std::vector<OpSegment> segments(1);
  std::set<const Op*> placed;
  for (const Kernel* kernel : kernels) {
    const Op* owner = nullptr;
    if (kernel->category == KernelCategory::kCommunication) {
      if (comm_ops.size() == 1)
        owner = comm_ops.front();  // the op's one collective (also for model-expanded kernels)
      else if (auto it = launcher.find(kernel); it != launcher.end())
        owner = comm_op_of_launcher(trace, it->second, position);
    }
    if (owner != nullptr && segments.back().comm_op != owner) {
      if (segments.back().comm_op != nullptr)
        segments.emplace_back();
      segments.back().comm_op = owner;
      placed.insert(owner);
    }
    if (owner != nullptr)
      segments.back().kernel_owner.emplace(kernel, owner);
    segments.back().kernels.push_back(kernel);
  }
  // Collectives without a recorded kernel (execution traces) run after the op's kernels.
  for (const Op* comm_op : comm_ops) {
    if (placed.count(comm_op))
      continue;
    if (segments.back().comm_op != nullptr)
      segments.emplace_back();
    segments.back().comm_op = comm_op;
    placed.insert(comm_op);
  }
  return segments;
}

// Every runtime call of the subtree rooted at `position`, with its correlation id.
std::unordered_map<std::int64_t, const RuntimeCall*> calls_under(const Trace& trace,
                                                                 std::size_t position) {
  std::unordered_map<std::int64_t, const RuntimeCall*> calls;
  std::vector<std::size_t> stack{position};
  while (!stack.empty()) {
    const Op& op = trace.ops[stack.back()];
    stack.pop_back();
    for (const RuntimeCall& call : op.runtime_calls)
      calls.emplace(call.correlation_id, &call);
    for (std::int64_t child : op.child_ids) {
      std::ptrdiff_t child_position = trace.position_of(child);
      if (child_position >= 0)
        stack.push_back(static_cast<std::size_t>(child_position));
    }
  }
  return calls;
}

// Where the previous recorded ops were: the last start of any thread, the last end per thread.
struct RecordedCursor {
  TimestampUs origin_us = 0;  // step start, or the first op's start
  std::optional<TimestampUs> previous_start_us;
  std::unordered_map<std::int64_t, TimestampUs> thread_end_us;
};

std::shared_ptr<const RecordedHostTiming> recorded_timing(
    const Op& op, const std::unordered_map<std::int64_t, const RuntimeCall*>& calls,
    RecordedCursor& cursor) {
  auto timing = std::make_shared<RecordedHostTiming>();
  const TimestampUs start = *op.measured_start_us;
  timing->thread_id = op.thread_id;
  const TimestampUs previous_start = cursor.previous_start_us.value_or(cursor.origin_us);
  timing->start_offset_us = std::max<DurationUs>(0, start - previous_start);
  auto thread_end = cursor.thread_end_us.find(op.thread_id);
  timing->thread_gap_us = std::max<DurationUs>(
      0,
      start - (thread_end == cursor.thread_end_us.end() ? cursor.origin_us : thread_end->second));
  cursor.previous_start_us = start;
  TimestampUs& end = cursor.thread_end_us[op.thread_id];
  end = std::max(end, start + *op.measured_duration_us);
  timing->cpu_us = *op.measured_duration_us;
  const RuntimeCall* first_block = nullptr;
  for (const auto& [correlation, call] : calls) {
    if (is_blocking_runtime_call(call->name) &&
        (first_block == nullptr || call->start_us < first_block->start_us)) {
      first_block = call;
    }
  }
  if (first_block != nullptr) {
    timing->block_offset_us = std::max<DurationUs>(0, first_block->start_us - start);
    timing->after_block_us = std::max<DurationUs>(
        0, start + timing->cpu_us - (first_block->start_us + first_block->duration_us));
  }
  return timing;
}

std::vector<int> world_members(int world_size) {
  std::vector<int> members(static_cast<std::size_t>(world_size));
  std::iota(members.begin(), members.end(), 0);
  return members;
}

std::vector<std::int64_t> produced_buffers(const Op& comm_op) {
  std::vector<std::int64_t> ids;
  for (const TensorRef& tensor : comm_op.outputs)
    ids.push_back(tensor.tensor_id);
  const CollectiveKind kind = comm_op.comm->kind;
  const bool in_place = kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kBroadcast ||
                        kind == CollectiveKind::kReduce || kind == CollectiveKind::kRecv;
  if (in_place) {
    for (const TensorRef& tensor : comm_op.inputs)
      ids.push_back(tensor.tensor_id);
  } else if (comm_op.inputs.size() >= 2) {
    ids.push_back(comm_op.inputs.front().tensor_id);  // c10d puts the output buffer first
  }
  std::erase(ids, -1);
  return ids;
}

// One shared list per distinct member set of a program.
class MemberListPool {
 public:
  MemberList intern(std::vector<int> ranks) {
    auto found = lists_.find(ranks);
    if (found == lists_.end()) {
      auto shared = std::make_shared<const std::vector<int>>(ranks);
      found = lists_.emplace(std::move(ranks), MemberList(std::move(shared))).first;
    }
    return found->second;
  }

 private:
  std::map<std::vector<int>, MemberList> lists_;
};

// `header` gives the process groups and the source named in errors.
SimCollective make_collective(const Trace& header, const Op& comm_op, const OpSegment& segment,
                              int sim_rank, int world_size, const std::vector<int>& world,
                              const ProgramSources& sources,
                              std::map<std::string, std::size_t>& next_index_in_group,
                              MemberListPool& member_lists) {
  SimCollective sim_collective;
  std::vector<int> members;
  sim_collective.comm = *comm_op.comm;
  const CommInfo& comm = sim_collective.comm;
  std::string route_group;  // the group the collective model routes it over
  if (is_point_to_point(comm.kind)) {
    if (comm.peer_rank < 0 || comm.peer_rank >= world_size) {
      throw InputError(header.source, "node " + std::to_string(comm_op.id),
                       "send/recv peer rank " + std::to_string(comm.peer_rank) +
                           " is outside the world of " + std::to_string(world_size));
    }
    const int from = comm.kind == CollectiveKind::kSend ? sim_rank : comm.peer_rank;
    const int to = comm.kind == CollectiveKind::kSend ? comm.peer_rank : sim_rank;
    // Pairing is per message stream of the channel; routing per channel.
    sim_collective.group = point_to_point_stream_name(from, to, comm.match_tag);
    route_group = point_to_point_group_name(from, to);
    members = {std::min(from, to), std::max(from, to)};
  } else {
    sim_collective.group = comm.process_group;
    members = world;
    auto group = std::find_if(
        header.process_groups.begin(), header.process_groups.end(),
        [&](const ProcessGroup& candidate) { return candidate.name == comm.process_group; });
    if (group != header.process_groups.end() && !group->ranks.empty()) {
      members = group->ranks;
      if (!std::is_sorted(members.begin(), members.end()))  // a job-wide group: 16,384 ranks
        std::sort(members.begin(), members.end());
    }
    if (group == header.process_groups.end() || group->ranks.empty()) {
      // The trace's default group spans the whole job.
      sim_collective.group = "";
    }
    route_group = sim_collective.group;
    if (!std::binary_search(members.begin(), members.end(), sim_rank)) {
      throw InputError(header.source, "node " + std::to_string(comm_op.id),
                       "rank " + std::to_string(sim_rank) + " runs a collective of group '" +
                           comm.process_group + "' that it is not a member of");
    }
  }
  sim_collective.members = member_lists.intern(std::move(members));
  sim_collective.index_in_group = next_index_in_group[sim_collective.group]++;
  sim_collective.produced_tensor_ids = produced_buffers(comm_op);
  sim_collective.seq = integer_attribute(comm_op, "comm_seq");

  // An execution trace written by perfsim keeps each communicator's stream here; a recorded
  // kernel's stream, when there is one, takes precedence below.
  if (const Attribute* stream = comm_op.find_attribute("stream")) {
    if (const auto* id = std::get_if<std::int64_t>(&stream->value))
      sim_collective.stream = *id;
  }
  DurationUs measured_us = 0;
  bool has_measured = false;
  for (const Kernel* kernel : segment.kernels) {
    if (segment.owner_of(kernel) != &comm_op)
      continue;
    sim_collective.stream = kernel->stream;
    if (kernel->measured_duration_us) {
      measured_us += *kernel->measured_duration_us;
      has_measured = true;
    }
  }
  CollectiveCall call;
  call.group = route_group;
  call.group_size = static_cast<int>(sim_collective.members.size());
  call.index_in_group = sim_collective.index_in_group;
  call.comm = &sim_collective.comm;
  call.op = &comm_op;
  if (has_measured)
    call.measured_kernel_time_us = measured_us;
  sim_collective.duration_us = sources.communication->collective_duration_us(call);
  sim_collective.combine = sources.communication->combine();
  return sim_collective;
}

}  // namespace

struct ProgramBuilder::State {
  State(const Trace& header, int sim_rank, int world_size, const ProgramSources& sources,
        const ProgramOptions& options)
      : header(header),
        sim_rank(sim_rank),
        world_size(world_size),
        sources(sources),
        options(options),
        world(world_members(world_size)),
        have_origin(header.measured_step.has_value()) {
    if (header.measured_step)
      cursor.origin_us = header.measured_step->start_us;
  }
  const Trace& header;
  int sim_rank;
  int world_size;
  ProgramSources sources;
  ProgramOptions options;
  RankProgram program;
  std::map<std::string, std::size_t> next_index_in_group;
  MemberListPool member_lists;
  const std::vector<int> world;
  OpInterner interner;
  // Consumed and produced buffers as labels that repeat with the layers (tensor_labels.hpp).
  TensorLabels tensor_labels;
  SimOp scratch;  // each op is built here and copied into the program only when new
  RecordedCursor cursor;
  bool have_origin;
};

ProgramBuilder::ProgramBuilder(const Trace& header, int sim_rank, int world_size,
                               const ProgramSources& sources, const ProgramOptions& options) {
  if (sources.kernels == nullptr || sources.communication == nullptr) {
    throw RuntimeFailure("build_rank_program: kernel and communication sources are required");
  }
  state_ = std::make_unique<State>(header, sim_rank, world_size, sources, options);
  state_->program.sim_rank = sim_rank;
  state_->program.world_size = world_size;
  state_->program.source = header.source;

  if (!header.unattributed_kernels.empty()) {
    SimOp queued;
    queued.name = "(kernels queued before the trace)";
    queued.queued_before_trace = true;
    Op placeholder;
    placeholder.name = std::string(queued.name);
    for (const Kernel& kernel : header.unattributed_kernels) {
      SimKernel sim_kernel;
      sim_kernel.name = state_->program.names->intern(kernel.name);
      sim_kernel.stream = kernel.stream;
      sim_kernel.category = kernel.category;
      // A collective begun before the trace has no record to size it by: its measured time.
      sim_kernel.duration_us =
          kernel.category == KernelCategory::kCommunication
              ? kernel.measured_duration_us.value_or(0)
              : state_->sources.kernels->kernel_duration_us(placeholder, kernel);
      queued.kernels.push_back(std::move(sim_kernel));
    }
    state_->program.coverage.kernels += queued.kernels.size();
    state_->program.ops.push_back(std::move(queued), 0);
  }
}

ProgramBuilder::~ProgramBuilder() = default;

void ProgramBuilder::add(const Trace& batch, std::size_t first_position) {
  State& s = *state_;
  const Trace& header = s.header;
  const int sim_rank = s.sim_rank;
  const int world_size = s.world_size;
  const ProgramSources& sources = s.sources;
  const ProgramOptions& options = s.options;
  const std::vector<int>& world = s.world;
  RankProgram& program = s.program;
  std::map<std::string, std::size_t>& next_index_in_group = s.next_index_in_group;
  MemberListPool& member_lists = s.member_lists;
  OpInterner& interner = s.interner;
  TensorLabels& tensor_labels = s.tensor_labels;
  SimOp& scratch = s.scratch;
  const std::optional<MeasuredStep>& step = header.measured_step;
  RecordedCursor& cursor = s.cursor;
  bool& have_origin = s.have_origin;
  for (std::size_t position : batch.top_level_positions()) {
    const Op& op = batch.ops[position];
    if (options.measured_step_only && step && op.measured_start_us &&
        (*op.measured_start_us < step->start_us ||
         *op.measured_start_us >= step->start_us + step->duration_us)) {
      continue;
    }
    std::vector<const Kernel*> kernels = batch.kernels_under(position);
    std::vector<ExpandedKernel> expanded;
    std::unordered_map<const Kernel*, DurationUs> expanded_us;
    if (kernels.empty() && sources.expand_kernels) {
      expanded = sources.expand_kernels(batch, position);
      for (const ExpandedKernel& planned : expanded) {
        kernels.push_back(&planned.kernel);
        expanded_us.emplace(&planned.kernel, planned.predicted_us);
      }
    }
    const std::vector<OpSegment> segments = split_by_collective(batch, position, kernels);
    std::shared_ptr<const RecordedHostTiming> recorded;
    std::unordered_map<std::int64_t, const RuntimeCall*> calls;
    if (options.replay_recorded_host && op.measured_start_us && op.measured_duration_us) {
      calls = calls_under(batch, position);
      if (!have_origin)
        cursor.origin_us = *op.measured_start_us;
      have_origin = true;
      recorded = recorded_timing(op, calls, cursor);
    }

    for (std::size_t s = 0; s < segments.size(); ++s) {
      const OpSegment& segment = segments[s];
      SimOp& sim_op = scratch;
      clear_keeping_capacity(sim_op);
      sim_op.name = program.names->intern(op.name);
      if (const Attribute* phase = op.find_attribute("phase"))
        if (const auto* text = std::get_if<std::string>(&phase->value))
          sim_op.phase = program.names->intern(*text);
      sim_op.measured_start_us = op.measured_start_us.value_or(0);
      sim_op.continues_previous = s > 0;
      sim_op.continued_by_next = s + 1 < segments.size();
      if (s == 0) {
        sim_op.waits_for_communication = is_wait_op(batch, position);
        if (sim_op.waits_for_communication)
          sim_op.waits_for_seq = waited_seq(batch, position);
        for (const TensorRef& tensor : op.inputs) {
          if (tensor.tensor_id < 0)
            continue;
          if (const auto label = tensor_labels.consume(tensor.tensor_id, program.ops.size()))
            sim_op.consumed_tensor_ids.push_back(*label);
        }
      }
      if (s + 1 == segments.size())
        sim_op.host_sync = host_sync_of(batch, position);
      sim_op.recorded_host = recorded;

      std::optional<SimCollective> collective;
      if (segment.comm_op != nullptr) {
        collective = make_collective(header, *segment.comm_op, segment, sim_rank, world_size, world,
                                     sources, next_index_in_group, member_lists);
        ++program.coverage.collectives;
        if (collective->comm.bytes_in == 0 && collective->comm.bytes_out == 0 &&
            collective->comm.kind != CollectiveKind::kBarrier) {
          ++program.coverage.collectives_without_size;
        }
        if (collective->group.empty() && collective->comm.group_size > 0 &&
            collective->comm.group_size < world_size && !is_point_to_point(collective->comm.kind)) {
          ++program.coverage.collectives_of_unlisted_groups;
        }
      }
      bool slot_placed = false;
      for (const Kernel* kernel : segment.kernels) {
        const bool is_comm_kernel = kernel->category == KernelCategory::kCommunication;
        if (is_comm_kernel && collective && segment.owner_of(kernel) == segment.comm_op) {
          if (slot_placed)
            continue;  // grouped kernels of one collective share its slot
          SimKernel slot;
          slot.name = program.names->intern(kernel->name);
          slot.stream = collective->stream;
          slot.category = KernelCategory::kCommunication;
          slot.duration_us = collective->duration_us;
          if (!kernel->launch_api.empty())
            slot.launch_api = program.names->intern(kernel->launch_api);
          slot.is_collective = true;
          sim_op.kernels.push_back(std::move(slot));
          slot_placed = true;
          continue;
        }
        SimKernel sim_kernel;
        sim_kernel.name = program.names->intern(kernel->name);
        sim_kernel.stream = kernel->stream;
        sim_kernel.category = kernel->category;
        if (is_comm_kernel) {
          // A communication kernel no collective record names: its measured time, since no
          // model can size it; counted.
          sim_kernel.duration_us = kernel->measured_duration_us.value_or(0);
          ++program.coverage.comm_kernels_without_collective;
        } else if (auto planned = expanded_us.find(kernel); planned != expanded_us.end()) {
          sim_kernel.duration_us = planned->second;
        } else {
          sim_kernel.duration_us =
              sources.kernels->kernel_duration_in_trace_us(batch, position, *kernel);
        }
        sim_kernel.host_waits = kernel->blocks_host();
        if (!kernel->launch_api.empty())
          sim_kernel.launch_api = program.names->intern(kernel->launch_api);
        sim_op.kernels.push_back(std::move(sim_kernel));
      }
      if (collective && !slot_placed) {
        // No recorded kernel (execution trace): the collective runs on the communication stream.
        SimKernel slot;
        slot.name = program.names->intern(std::string("nccl:") +
                                          std::string(collective_name(collective->comm.kind)));
        slot.stream = collective->stream;
        slot.category = KernelCategory::kCommunication;
        slot.duration_us = collective->duration_us;
        slot.is_collective = true;
        sim_op.kernels.push_back(std::move(slot));
      }
      if (collective) {
        sim_op.collective_index = static_cast<std::uint32_t>(program.coverage.collectives - 1);
        const std::vector<std::int64_t> produced = std::move(collective->produced_tensor_ids);
        auto shared = std::make_shared<SimCollective>(std::move(*collective));
        shared->produced_tensor_ids.clear();
        for (const std::int64_t tensor : produced)
          tensor_labels.produce(tensor, program.ops.size(), shared->produced_tensor_ids);
        sim_op.collective = std::move(shared);
      }
      if (recorded) {
        // Kernels and slots were pushed in segment order, skipping the extra kernels of a
        // collective: match them to the segment's kernels by walking both.
        std::size_t next = 0;
        std::set<const Op*> slotted;
        for (const Kernel* kernel : segment.kernels) {
          const Op* owner = segment.owner_of(kernel);
          if (owner != nullptr && !slotted.insert(owner).second)
            continue;  // a later kernel of the same collective slot
          if (next >= sim_op.kernels.size())
            break;
          SimKernel& sim_kernel = sim_op.kernels[next++];
          if (auto call = calls.find(kernel->correlation_id); call != calls.end()) {
            sim_kernel.recorded_launch_offset_us = call->second->start_us - *op.measured_start_us;
            sim_kernel.recorded_launch_us = call->second->duration_us;
          }
        }
      }

      if (s == 0)
        ++program.coverage.top_level_ops;
      program.coverage.kernels += sim_op.kernels.size();
      if (sim_op.kernels.empty())
        ++program.coverage.ops_without_kernels;
      interner.append(program.ops, sim_op, first_position + position);
    }
  }
}

const SimOpList& ProgramBuilder::ops() const {
  return state_->program.ops;
}

RankProgram ProgramBuilder::finish() {
  RankProgram program = std::move(state_->program);
  program.ops.shrink_to_fit();
  state_.reset();
  return program;
}

RankProgram build_rank_program(const Trace& trace, int sim_rank, int world_size,
                               const ProgramSources& sources, const ProgramOptions& options) {
  ProgramBuilder builder(trace, sim_rank, world_size, sources, options);
  builder.add(trace, 0);
  return builder.finish();
}

}  // namespace perfsim::engine
