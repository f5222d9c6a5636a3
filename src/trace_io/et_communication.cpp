#include "trace_io/et_communication.hpp"

#include <algorithm>
#include <map>

#include "io/checked_number.hpp"
#include "perfsim/dtype.hpp"
#include "trace_io/et_comm_record.hpp"
#include "trace_io/et_node_location.hpp"
#include "trace_io/et_process_groups.hpp"

namespace perfsim::trace_io {
namespace {

constexpr std::string_view kCommRecord = "record_param_comms";
constexpr std::string_view kProcessGroupInit = "## process_group:init ##";
constexpr std::string_view kWait = "wait";

void set_attribute(Op& op, std::string name, std::int64_t value) {
  for (Attribute& attribute : op.attributes) {
    if (attribute.name == name) {
      attribute.value = value;
      return;
    }
  }
  op.attributes.push_back({std::move(name), value});
}

bool is_all_to_all(CollectiveKind kind) {
  return kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kAllToAllv;
}

bool has_root(CollectiveKind kind) {
  return kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kReduce;
}

class CommunicationBuilder {
 public:
  CommunicationBuilder(std::vector<Op>& ops, const std::string& file) : ops_(ops), file_(file) {}

  void read_process_groups(const Op& op, const std::vector<RawArgument>& raw) {
    ProcessGroupInit init = read_process_group_init(op, raw, file_);
    summary_.world_size = std::max(summary_.world_size, init.world_size);
    for (ProcessGroup& group : init.groups)
      add_group(std::move(group));
  }

  void read_record(std::size_t position, const std::vector<RawArgument>& raw) {
    Op& op = ops_[position];
    NodeLocation where{file_, op.id};
    CommRecord record = read_comm_record(op, raw, where);
    if (record.collective == kWait) {
      set_attribute(op, "comm_wait", 1);
      if (record.seq)
        set_attribute(op, "comm_seq", *record.seq);
      note_rank(record.rank_argument);
      return;
    }
    std::optional<CollectiveKind> kind = parse_collective(record.collective);
    if (!kind)
      where.fail(record.collective_field, "unknown collective \"" + record.collective + "\"");
    CommInfo comm;
    comm.kind = *kind;
    if (is_all_to_all(*kind)) {
      comm.kind = record.in_split.empty() && record.out_split.empty() ? CollectiveKind::kAllToAll
                                                                      : CollectiveKind::kAllToAllv;
    }
    check_split_count(record, where);
    comm.process_group = record.group_name;
    comm.group_size = record.group_size > 0 ? record.group_size : split_count(record);
    comm.dtype = record.dtype;
    int element_size = element_bytes(record.dtype);
    if (element_size == 0)
      element_size = record.fallback_element_bytes;
    // Elements are at most 2^50 (et_comm_record) and elements at most 64 bytes: no overflow.
    comm.bytes_in = record.in_elements * element_size;
    comm.bytes_out = record.out_elements * element_size;
    if (comm.bytes_in > io::kMaxBytes || comm.bytes_out > io::kMaxBytes)
      where.fail("inputs", "message of " + std::to_string(std::max(comm.bytes_in, comm.bytes_out)) +
                               " bytes exceeds " + std::to_string(io::kMaxBytes));
    comm.in_split_elements = record.in_split;
    comm.out_split_elements = record.out_split;
    if (record.rank_argument) {
      auto global = [&](std::int64_t group_rank) {
        // Start, stride and rank are bounded by 2^20 (et_comm_record): no overflow.
        const std::int64_t rank = record.global_rank_start.value_or(0) +
                                  group_rank * record.global_rank_stride.value_or(1);
        if (rank < 0 || rank >= io::kMaxRanks)
          where.fail("attrs.global_rank_start", "global rank " + std::to_string(rank) +
                                                    " of group rank " + std::to_string(group_rank) +
                                                    " is out of range");
        return static_cast<int>(rank);
      };
      if (has_root(*kind))
        comm.root_rank = global(*record.rank_argument);
      else if (is_point_to_point(*kind))
        comm.peer_rank = global(*record.rank_argument);
      else
        note_rank(record.rank_argument);
    }
    if (record.seq)
      comm.tag = *record.seq;
    comm.match_tag = record.match_tag;
    if (record.group_size > 0)
      summary_.world_size = std::max(summary_.world_size, record.group_size);
    if (!record.group_name.empty())
      add_group_from_record(record);

    Op& owner = owner_for(position);
    if (record.seq)
      set_attribute(owner, "comm_seq", *record.seq);
    owner.comm = std::move(comm);
  }

  // A c10d op with no record_param_comms below it (older traces): its own arguments.
  // alltoall_base_(output, input, pg, output_split_sizes, input_split_sizes, timeout);
  // allreduce_(tensors[], pg, reduce_op, timeout).
  void read_c10d_without_record(std::size_t position, const std::vector<RawArgument>& raw) {
    Op& op = ops_[position];
    if (op.comm || raw.empty())
      return;
    for (std::int64_t child : op.child_ids) {
      const Op* child_op = find(child);
      if (child_op != nullptr && (child_op->name == kCommRecord || child_op->comm))
        return;
    }
    std::string_view name = op.name;
    CommInfo comm;
    if (name == "c10d::alltoall_base_" && raw.size() >= 5 && raw[0].tensors.size() == 1 &&
        raw[1].tensors.size() == 1) {
      const TensorRef& output = raw[0].tensors.front();
      const TensorRef& input = raw[1].tensors.front();
      comm.out_split_elements = raw[3].integers;
      comm.in_split_elements = raw[4].integers;
      comm.kind = comm.in_split_elements.empty() && comm.out_split_elements.empty()
                      ? CollectiveKind::kAllToAll
                      : CollectiveKind::kAllToAllv;
      comm.dtype = input.dtype;
      comm.bytes_in = input.bytes();
      comm.bytes_out = output.bytes();
      comm.group_size = static_cast<int>(comm.in_split_elements.size());
    } else if (name == "c10d::allreduce_" && !raw[0].tensors.empty()) {
      comm.kind = CollectiveKind::kAllReduce;
      comm.dtype = raw[0].tensors.front().dtype;
      for (const TensorRef& tensor : raw[0].tensors)
        comm.bytes_in += tensor.bytes();
      comm.bytes_out = comm.bytes_in;
    } else {
      return;
    }
    op.comm = std::move(comm);
  }

  CommunicationSummary finish() {
    if (summary_.process_groups.empty())
      summary_.process_groups.push_back(ProcessGroup{"", {}, "world"});
    if (summary_.world_size == 0) {
      for (const auto& [key, count] : split_counts_)
        summary_.world_size = std::max(summary_.world_size, count);
    }
    return std::move(summary_);
  }

 private:
  const Op* find(std::int64_t id) const {
    auto it = std::lower_bound(ops_.begin(), ops_.end(), id,
                               [](const Op& op, std::int64_t key) { return op.id < key; });
    return it != ops_.end() && it->id == id ? &*it : nullptr;
  }

  // The c10d:: op that issued the record carries the collective; else the record itself.
  Op& owner_for(std::size_t record_position) {
    Op& record = ops_[record_position];
    if (record.parent_id != kNoParent) {
      auto it = std::lower_bound(ops_.begin(), ops_.end(), record.parent_id,
                                 [](const Op& op, std::int64_t key) { return op.id < key; });
      if (it != ops_.end() && it->id == record.parent_id && it->name.starts_with("c10d::") &&
          !it->comm)
        return *it;
    }
    return record;
  }

  static int split_count(const CommRecord& record) {
    return static_cast<int>(std::max(record.in_split.size(), record.out_split.size()));
  }

  void check_split_count(const CommRecord& record, const NodeLocation& where) {
    for (const auto* split : {&record.in_split, &record.out_split}) {
      if (split->empty())
        continue;
      int count = static_cast<int>(split->size());
      if (record.group_size > 0 && count != record.group_size)
        where.fail(record.split_field, std::to_string(count) +
                                           " split sizes but the process group has " +
                                           std::to_string(record.group_size) + " ranks");
      if (record.group_size == 0) {
        // 1.0.x names the group only by its address: every all-to-allv on one group must
        // list one split size per member, so the counts must agree.
        std::int64_t key = record.group_key.value_or(0);
        auto [it, inserted] = split_counts_.emplace(key, count);
        if (!inserted && it->second != count)
          where.fail(record.split_field, std::to_string(count) +
                                             " split sizes but earlier collectives on this "
                                             "process group list " +
                                             std::to_string(it->second));
      }
    }
  }

  void note_rank(std::optional<std::int64_t> rank) {
    if (rank && *rank >= 0 && !summary_.recorded_rank)
      summary_.recorded_rank = static_cast<int>(*rank);
  }

  void add_group(ProcessGroup group) {
    for (const ProcessGroup& known : summary_.process_groups) {
      if (known.name == group.name)
        return;
    }
    summary_.process_groups.push_back(std::move(group));
  }

  void add_group_from_record(const CommRecord& record) {
    ProcessGroup group{record.group_name, {}, record.group_description};
    bool world = record.group_description == "default_pg";
    if (!world && record.global_rank_start && record.global_rank_stride && record.group_size > 0) {
      for (int i = 0; i < record.group_size; ++i)
        group.ranks.push_back(
            static_cast<int>(*record.global_rank_start + i * *record.global_rank_stride));
    }
    add_group(std::move(group));
  }

  std::vector<Op>& ops_;
  const std::string& file_;
  CommunicationSummary summary_;
  std::map<std::int64_t, int> split_counts_;
};

}  // namespace

CommunicationSummary attach_communication(std::vector<Op>& ops,
                                          const std::vector<std::vector<RawArgument>>& raw_inputs,
                                          const std::string& file) {
  CommunicationBuilder builder(ops, file);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == kProcessGroupInit)
      builder.read_process_groups(ops[i], raw_inputs[i]);
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == kCommRecord)
      builder.read_record(i, raw_inputs[i]);
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name.starts_with("c10d::"))
      builder.read_c10d_without_record(i, raw_inputs[i]);
  }
  return builder.finish();
}

}  // namespace perfsim::trace_io
