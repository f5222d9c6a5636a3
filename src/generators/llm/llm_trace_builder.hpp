#pragma once
// Appends ops to one rank's generated trace the way PyTorch would record them: an aten op with
// its input and output tensors (shapes and dtypes, so a kernel model can price it) and one
// kernel whose duration is left to the KernelDurationSource; a communication op with its
// CommInfo and one kernel on its group's stream.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "generators/llm/trace_sink.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::generators::llm {

// Streams of a generated rank. Each communicator gets its own stream, as NCCL gives each
// communicator its own; pipeline traffic gets one per direction and peer so that a send never
// queues behind a receive (Megatron batches them with ncclGroupStart/End).
inline constexpr StreamId kTensorParallelStream = kDefaultCommStream;
inline constexpr StreamId kDataParallelStream = kDefaultCommStream + 1;
inline constexpr StreamId kSendNextStream = kDefaultCommStream + 2;
inline constexpr StreamId kRecvPrevStream = kDefaultCommStream + 3;
inline constexpr StreamId kSendPrevStream = kDefaultCommStream + 4;
inline constexpr StreamId kRecvNextStream = kDefaultCommStream + 5;
// Context parallelism: K/V chunks around the CP ring.
inline constexpr StreamId kContextSendStream = kDefaultCommStream + 6;
inline constexpr StreamId kContextRecvStream = kDefaultCommStream + 7;
// Expert parallelism: the MoE token all-to-alls over the EP group.
inline constexpr StreamId kExpertParallelStream = kDefaultCommStream + 8;
// Transformer Engine userbuffers: chunks passed around the TP ring (ring-exchange overlap).
inline constexpr StreamId kTensorSendStream = kDefaultCommStream + 9;
inline constexpr StreamId kTensorRecvStream = kDefaultCommStream + 10;
// The expert parameters' all-gathers under overlap_param_gather: Megatron-Core's expert buffers
// are gathered over the expert-DP communicator, its own NCCL stream beside the dense DP one.
inline constexpr StreamId kExpertDataParallelStream = kDefaultCommStream + 11;
// FP8 delayed scaling: the amax all-reduces over Megatron's amax reduction group (TP x DP x CP
// of a stage), a communicator of its own.
inline constexpr StreamId kAmaxReductionStream = kDefaultCommStream + 12;

// The op of load_batch(): host overhead assets may give it the data loader's CPU time.
inline constexpr std::string_view kLoadBatchOpName = "megatron.get_batch";

// Host-only ops of a MoE layer (llm_moe_host_path.cpp). Host overheads price them by name.
// One more local expert's cuBLASLt GEMM, issued by Transformer Engine's C++ loop
// (nvte_multi_stream_cublas_gemm) inside the Python call its te::grouped_gemm op stands for.
inline constexpr std::string_view kExpertGemmLaunchOpName = "te::multi_stream_cublas_gemm.launch";
// One expert weight's dummy gradient, allocated by TE GroupedLinear's backward in Python
// (handle_custom_ddp_from_mcore: torch.empty per weight) once its wgrad went to main_grad.
inline constexpr std::string_view kExpertDummyWgradOpName = "te::grouped_linear.dummy_wgrad";
// FP8 current scaling (llm_fp8_current_scaling.cpp): the kernels Transformer Engine's
// Float8CurrentScalingQuantizer::quantize_impl launches from C++ besides the cast, inside the
// Python call the cast's te::cast_transpose op stands for: nvte_compute_amax (one read of the
// tensor into its amax) and nvte_compute_scale_from_amax (the scale from the amax); and one
// more local expert's cast kernel, launched by the loop of tex.split_quantize (GroupedLinear)
// whose GPU work the grouped te::cast_transpose op prices. Host overheads price them by name.
inline constexpr std::string_view kFp8AmaxOpName = "te::compute_amax";
inline constexpr std::string_view kFp8ScaleOpName = "te::compute_scale_from_amax";
inline constexpr std::string_view kFp8ExpertCastLaunchOpName = "te::split_quantize.launch";
// FP8 primary weights (ParallelConfig::fp8_param_gather): the optimizer step's cast of an fp32
// main-weight fragment into the E4M3 weight, and the transpose each weight gets after its gather.
inline constexpr std::string_view kFp8MasterCastOpName = "te::cast_master_weight_to_fp8";
inline constexpr std::string_view kFp8WeightTransposeOpName = "te::fp8_transpose";
// FP8 delayed scaling: the fused kernel that takes the reduced amaxes into the amax history
// and computes the scales and their inverses (TE's fused_amax_and_scale_update_after_reduction).
inline constexpr std::string_view kFp8AmaxScaleUpdateOpName =
    "te::fused_amax_and_scale_update_after_reduction";
// Megatron-Core's alltoall dispatcher waits for its device-to-host copies of the token counts
// (MoEAlltoAllTokenDispatcher._maybe_dtoh_and_synchronize: d2h_event.synchronize()).
inline constexpr std::string_view kDispatcherSyncOpName = "megatron.moe_dispatcher.d2h_sync";

// What one communication op moves.
struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string group;  // ProcessGroup name; ignored for send/recv
  int group_size = 0;
  int peer_rank = -1;  // send/recv
  StreamId stream = kTensorParallelStream;
  std::int64_t match_tag = 0;  // send/recv: CommInfo::match_tag
};

class RankTraceBuilder {
 public:
  RankTraceBuilder(int rank, int world_size, DType activation_dtype);

  // A fresh GPU tensor (its own id and storage).
  TensorRef tensor(std::vector<std::int64_t> shape, DType dtype);
  TensorRef tensor(std::vector<std::int64_t> shape) { return tensor(std::move(shape), dtype_); }
  // The same tensor (id and storage) seen with another shape, as a view.
  static TensorRef view(const TensorRef& tensor, std::vector<std::int64_t> shape);
  // A tensor of its own id that lives in `storage`'s memory, `offset_elements` (of `dtype`)
  // past `storage`'s own offset: a saved activation as the backward reads it, a bucket of the
  // gradient buffer. Only the memory replay sees storages: the engine orders ops by tensor
  // ids, and a fresh id keeps an operand's dependencies what they were.
  TensorRef alias(const TensorRef& storage, std::vector<std::int64_t> shape, DType dtype,
                  std::int64_t offset_elements = 0);

  // Declares `tensors` persistent memory of `category` (memory_category_name): one annotation
  // op listing them (memory/memory_category.hpp, kDeclaredCategoryAttribute). Annotations are
  // not simulated.
  void declare_persistent(std::string_view category, std::vector<TensorRef> tensors);

  // One compute op with one kernel on the compute stream. `flops` is recorded as the op's
  // "flops" attribute (what the op computes, for tests and MFU; the kernel model prices it
  // from the shapes).
  void compute(std::string op_name, std::vector<TensorRef> inputs, std::vector<TensorRef> outputs,
               KernelCategory category, double flops);
  // A communication op. In-place kinds (all-reduce, recv) list `buffer` as input; the others
  // list `input` as input and `output` as output. Consumers of the result name the output
  // tensor (or the buffer), so the engine makes them wait for the collective.
  void communicate(const CollectiveSpec& spec, const TensorRef& input, const TensorRef& output);

  // torch.cuda.synchronize(): an op without kernels whose cudaDeviceSynchronize call blocks the
  // host until every stream of the rank, communication included, has drained.
  void synchronize_device();
  // get_batch on a stage that reads data: the data loader's next batch, broadcast over the TP
  // group; with `host_sync` after its sizes were copied to the host (a blocking device-to-host
  // copy: the host waits for the compute stream). No kernel worth pricing: its cost is the CPU
  // time host overheads give the op.
  void load_batch(bool host_sync);
  // An op without kernels: host work only (a Python-level call or a launch from a C++ loop
  // that the kernel of another op already prices); host overheads give it its CPU time by name.
  void host_call(std::string op_name);
  // An op without kernels whose cudaEventSynchronize blocks the host until the compute stream
  // has drained up to it (an event recorded after device-to-host copies queued behind it).
  void wait_for_compute_stream(std::string op_name);

  // Attributes attached to ops appended from now on ("phase", "micro_batch", "layer").
  void set_context(std::string phase, int micro_batch, int layer);
  void set_phase(std::string phase) { phase_ = std::move(phase); }
  void set_layer(int layer) { layer_ = layer; }
  int layer() const { return layer_; }
  // Compute ops appended from now on run beside a communication kernel holding this many SMs
  // (attribute "contention_sms"; 0: none) and moving this much HBM traffic
  // ("contention_hbm_GBps"; 0: none). The kernel models slow them accordingly.
  void set_contention_sms(int sms) { contention_sms_ = sms; }
  int contention_sms() const { return contention_sms_; }
  void set_contention_hbm_GBps(double rate) { contention_hbm_GBps_ = rate; }
  double contention_hbm_GBps() const { return contention_hbm_GBps_; }
  // FP8 blockwise scaling: GEMM ops appended from now on with an FP8 operand carry
  // kFp8BlockScalingAttribute (the kernel models price their block-scaled main loop).
  void set_fp8_block_scaling(bool on) { fp8_block_scaling_ = on; }

  // The trace: its header, and its ops not yet handed to a sink. An op may be edited through
  // it (trace().ops.back()) until the next flush().
  Trace& trace() { return trace_; }
  Trace take();
  // Hands the ops appended from now on to `sink` at each flush() instead of keeping them (the
  // header as it is now goes to sink.begin first); without a sink the trace collects every op.
  void stream_to(TraceSink& sink);
  // With a sink: hands it the ops appended since the last flush and drops them. Without: none.
  void flush();

 private:
  void add_context(Op& op) const;
  std::size_t context_attributes() const;  // how many attributes add_context adds

  Trace trace_;
  TraceSink* sink_ = nullptr;
  std::size_t flushed_ops_ = 0;  // ops handed to the sink so far: the next op's trace position
  DType dtype_;
  std::int64_t next_tensor_id_ = 1;
  std::int64_t next_op_id_ = 1;
  std::string phase_;
  int micro_batch_ = -1;
  int layer_ = -1;
  int contention_sms_ = 0;
  double contention_hbm_GBps_ = 0;
  bool fp8_block_scaling_ = false;
};

// Marks the compute ops appended during its lifetime as running beside a communication
// kernel of `sms` SMs moving `hbm_GBps` through HBM (kernels/comm_hbm_traffic.hpp); each the
// larger of this and an enclosing mark.
class ContentionScope {
 public:
  ContentionScope(RankTraceBuilder& builder, int sms, double hbm_GBps = 0)
      : builder_(builder),
        previous_sms_(builder.contention_sms()),
        previous_hbm_GBps_(builder.contention_hbm_GBps()) {
    builder_.set_contention_sms(std::max(previous_sms_, sms));
    builder_.set_contention_hbm_GBps(std::max(previous_hbm_GBps_, hbm_GBps));
  }
  ~ContentionScope() {
    builder_.set_contention_sms(previous_sms_);
    builder_.set_contention_hbm_GBps(previous_hbm_GBps_);
  }
  ContentionScope(const ContentionScope&) = delete;
  ContentionScope& operator=(const ContentionScope&) = delete;

 private:
  RankTraceBuilder& builder_;
  int previous_sms_;
  double previous_hbm_GBps_;
};

}  // namespace perfsim::generators::llm
