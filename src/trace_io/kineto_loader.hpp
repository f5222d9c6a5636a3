#pragma once
// Kineto (PyTorch profiler, Chrome-trace JSON) loader: rebuilds the op -> runtime call ->
// GPU activity tree of one rank.
//
// Reconstruction rules (see kineto_loader.cpp for the why):
// - cpu_op and user_annotation events nest by time containment per CPU thread; ties on start
//   are resolved by longer duration first, then by file order (the earlier event is the
//   parent, as the profiler writes parents first).
// - A runtime call attaches to the innermost op or annotation containing it; a GPU activity
//   (kernel, gpu_memcpy, gpu_memset) attaches through args.correlation to its runtime call and
//   becomes a Kernel of the op that issued the call.
// - Trace::ops is in start-time order (parents before children); op ids are positions in
//   that order (the profiler's External id is kept as the attribute "external_id").
// - An annotation that launches GPU work itself while no working op encloses it is turned
//   into a working op, so that the engine, which walks working ops, sees its kernels.
// - Every event is kept, also outside the ProfilerStep window (they are counted in the
//   report); the overhead extractor restricts itself to the window.
// - A GPU activity whose runtime call is not in the trace (launched before profiling began)
//   is not an error: it is kept in Trace::unattributed_kernels and counted.
// - CommInfo is set on one op per collective: the top-most working op of the collective's
//   chain (c10d::* > record_param_comms > nccl:*), or the chain's top op when the working op
//   around it already holds another collective; see kineto_comm.hpp.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/input_file.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::trace_io {

// What the loader noticed without failing.
struct KinetoLoadReport {
  std::int64_t cpu_ops = 0;
  std::int64_t annotations = 0;
  std::int64_t runtime_calls = 0;
  std::int64_t gpu_activities = 0;
  std::int64_t unattributed_gpu_activities = 0;  // no runtime call with their correlation
  std::int64_t runtime_calls_outside_ops = 0;    // enclosed by no op or annotation: dropped
  std::int64_t events_outside_step = 0;          // CPU events not inside the ProfilerStep window
  std::int64_t partial_overlaps = 0;             // events that start inside an op but end after it
  std::int64_t annotations_made_working = 0;
  std::int64_t profiler_steps = 0;  // ProfilerStep#N annotations (the first is measured_step)
  std::int64_t collectives = 0;     // ops given a CommInfo
  std::int64_t unidentified_collectives = 0;  // NCCL kernels whose collective kind is unknown
  std::int64_t dropped_collectives = 0;       // collectives no op could hold
  std::map<std::string, std::int64_t> ignored_events;  // by category or phase
};

struct KinetoLoad {
  Trace trace;
  KinetoLoadReport report;
};

KinetoLoad load_kineto_trace_with_report(const io::InputBytes& input);

Trace load_kineto_trace(const io::InputBytes& input);

// spec: a .json or .json.gz file, or "archive.tar.gz:member".
Trace load_kineto_trace_file(const std::string& spec);

// Every *.json member of a tar(.gz) archive, ordered by distributedInfo.rank. Throws
// InputError naming the archive when two members claim the same rank or none is a trace.
std::vector<Trace> load_kineto_archive(const std::string& archive_path);

}  // namespace perfsim::trace_io
