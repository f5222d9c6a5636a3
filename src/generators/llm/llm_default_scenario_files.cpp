// Generated from the files named below (tests/unit/llm_default_scenario_test.cpp checks that
// they are still equal), so that `perfsim` with no arguments needs nothing outside the binary.
#include "generators/llm/llm_default_scenario.hpp"

namespace perfsim::generators::llm {
namespace {

// configs/models/llama3-70b.json
constexpr const char* kDefaultModelJson = R"json({
  "schema": "perfsim-llm-model/1",
  "name": "llama3-70b",
  "aliases": ["Meta-Llama-3-70B", "Llama-3.1-70B", "Meta-Llama-3.1-70B", "Llama-3.3-70B"],
  "source": "Llama 3 herd paper (Dubey et al. 2024) Table 3 and the released config: 80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672, vocab 128256, context 8192; global batch 512 sequences (4M tokens) assumed; position embedding: rotary (Dubey et al. 2024 Sec. 3.2, RoPE base frequency 500000)",
  "layers": 80,
  "hidden": 8192,
  "heads": 64,
  "kv_heads": 8,
  "ffn_hidden": 28672,
  "gated_ffn": true,
  "position_embedding": "rope",
  "vocab": 128256,
  "tied_embeddings": false,
  "seq_len": 8192,
  "micro_batch": 1,
  "global_batch": 512,
  "dtype": "bf16"
}
)json";

// configs/topologies/hgx-h100-8node.json
constexpr const char* kDefaultTopologyJson = R"json({
  "name": "hgx-h100-8node",
  "description": "HGX H100: 8x H100-SXM5-80GB on NVSwitch (NVLink4, 18 links per GPU), 8x NDR 400 Gb/s InfiniBand (ConnectX-7) NICs, one per GPU; 8 node(s).",
  "nodes": 8,
  "network": "InfiniBand, rail-optimized non-blocking fat tree (NIC i of every node on rail i)",
  "node": {
    "gpus": 8,
    "gpu_model": "H100-SXM5-80GB",
    "fabric": {
      "type": "nvswitch",
      "nvlinks_per_gpu": 18,
      "link_class": "nvlink4-nvswitch"
    },
    "pcie": {
      "generation": 5,
      "link_class": "pcie5",
      "switches": [
        {
          "name": "pcie-switch0",
          "gpus": [
            0,
            1
          ],
          "host_bridge": "cpu0"
        },
        {
          "name": "pcie-switch1",
          "gpus": [
            2,
            3
          ],
          "host_bridge": "cpu0"
        },
        {
          "name": "pcie-switch2",
          "gpus": [
            4,
            5
          ],
          "host_bridge": "cpu1"
        },
        {
          "name": "pcie-switch3",
          "gpus": [
            6,
            7
          ],
          "host_bridge": "cpu1"
        }
      ]
    },
    "nics": {
      "count": 8,
      "rate_Gbps": 400,
      "rails": [
        [
          0
        ],
        [
          1
        ],
        [
          2
        ],
        [
          3
        ],
        [
          4
        ],
        [
          5
        ],
        [
          6
        ],
        [
          7
        ]
      ],
      "link_class": "ib-ndr400"
    }
  },
  "link_classes": {
    "nvlink4-nvswitch": {
      "medium": "nvlink4-nvswitch",
      "bandwidth_GBps": 450,
      "note": "only all-reduce was measured; other collectives reuse its bus-bandwidth curve (nccl-tests busbw is meant to be comparable across collectives)",
      "curves": {
        "all_reduce": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "note": "measured on Azure ND H200 v5 (8x H200, NVLink4/NVSwitch as in HGX H100)"
        },
        "all_gather": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "note": "measured on Azure ND H200 v5 (8x H200, NVLink4/NVSwitch as in HGX H100)"
        },
        "reduce_scatter": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "note": "measured on Azure ND H200 v5 (8x H200, NVLink4/NVSwitch as in HGX H100)"
        },
        "all_to_all": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "note": "measured on Azure ND H200 v5 (8x H200, NVLink4/NVSwitch as in HGX H100)"
        },
        "broadcast": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "note": "measured on Azure ND H200 v5 (8x H200, NVLink4/NVSwitch as in HGX H100)"
        },
        "send": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "note": "measured on Azure ND H200 v5 (8x H200, NVLink4/NVSwitch as in HGX H100)"
        }
      }
    },
    "ib-ndr400": {
      "medium": "infiniband-ndr",
      "bandwidth_GBps": 50.0,
      "note": "only all-reduce was measured; other collectives reuse its bus-bandwidth curve (nccl-tests busbw is meant to be comparable across collectives)",
      "curves": {
        "all_reduce": "h100-ib400-2node-allreduce",
        "all_gather": "h100-ib400-2node-allreduce",
        "reduce_scatter": "h100-ib400-2node-allreduce",
        "all_to_all": "h100-ib400-2node-allreduce",
        "broadcast": "h100-ib400-2node-allreduce",
        "send": "h100-ib400-2node-allreduce"
      }
    },
    "pcie5": {
      "medium": "pcie5-x16",
      "bandwidth_GBps": 50,
      "curves": {
        "all_reduce": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "bandwidth_scale": 0.1,
          "note": "stand-in: NVSwitch curve at PCIe bandwidth; PCIe carries collectives only when NVLink is disabled"
        },
        "all_gather": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "bandwidth_scale": 0.1,
          "note": "stand-in: NVSwitch curve at PCIe bandwidth; PCIe carries collectives only when NVLink is disabled"
        },
        "reduce_scatter": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "bandwidth_scale": 0.1,
          "note": "stand-in: NVSwitch curve at PCIe bandwidth; PCIe carries collectives only when NVLink is disabled"
        },
        "all_to_all": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "bandwidth_scale": 0.1,
          "note": "stand-in: NVSwitch curve at PCIe bandwidth; PCIe carries collectives only when NVLink is disabled"
        },
        "broadcast": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "bandwidth_scale": 0.1,
          "note": "stand-in: NVSwitch curve at PCIe bandwidth; PCIe carries collectives only when NVLink is disabled"
        },
        "send": {
          "asset": "azure-ndh200v5-1node-allreduce-busbw",
          "bandwidth_scale": 0.1,
          "note": "stand-in: NVSwitch curve at PCIe bandwidth; PCIe carries collectives only when NVLink is disabled"
        }
      }
    }
  }
}
)json";

// configs/devices/H100-SXM.json
constexpr const char* kDefaultDeviceJson = R"json({
  "schema": "perfsim-device/1",
  "name": "H100-SXM",
  "aliases": [
    "NVIDIA H100 80GB HBM3",
    "H100"
  ],
  "architecture": "hopper",
  "sm_count": {
    "value": 132,
    "provenance": "vendor-spec",
    "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
  },
  "hbm_capacity_bytes": {
    "value": 85027979264,
    "provenance": "measured",
    "source": "PyTorch torch.cuda.get_device_properties on NVIDIA H100 80GB HBM3 in public logs: total_memory=81082-81090MB (MiB; 81089 taken); its OOM messages read 'total capacity of 79.11-79.21 GiB'. What a process sees (totalGlobalMem), not the datasheet's 80 GB"
  },
  "hbm_bandwidth_GBps": {
    "value": 3350,
    "provenance": "vendor-spec",
    "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
  },
  "hbm_streaming_bandwidth_GBps": {
    "value": 2900,
    "provenance": "measured",
    "source": "STREAM copy on Azure ND H100 v5 (H100 80GB HBM3 SXM), samuel-bohman/AI-benchmarking-guide Azure_Results/ND_H100_v5_results.md @ 26d18e94: copy 2.90, mul 2.90, add 2.97, triad 2.97 TB/s; copy reads one stream and writes one, as a cast, norm or activation kernel does"
  },
  "l2_size_bytes": {
    "value": 52428800,
    "provenance": "vendor-spec",
    "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
  },
  "l2_bandwidth_GBps": {
    "value": 10240,
    "provenance": "estimate",
    "source": "assumed 2x the A100 estimate (Hopper L2 is 1.25x larger with higher clocks); no measurement yet"
  },
  "pcie_bandwidth_GBps": {
    "value": 63,
    "provenance": "vendor-spec",
    "source": "PCIe 5.0 x16, 32 GT/s x16 lanes with 128b/130b encoding, one direction"
  },
  "min_kernel_duration_us": {
    "value": 2.0,
    "provenance": "estimate",
    "source": "assumed equal to the V100 launch-to-completion floor measured in the DLRM Kineto fixture; no trace for this GPU yet"
  },
  "peak_tflops": {
    "tensor_core": {
      "tf32": {
        "value": 494.7,
        "provenance": "vendor-spec",
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
      },
      "fp16": {
        "value": 989.4,
        "provenance": "vendor-spec",
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
      },
      "bf16": {
        "value": 989.4,
        "provenance": "vendor-spec",
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
      },
      "fp8": {
        "value": 1978.9,
        "provenance": "vendor-spec",
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
      },
      "fp64": {
        "value": 66.9,
        "provenance": "vendor-spec",
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
      }
    },
    "cuda_core": {
      "fp64": {
        "value": 33.5,
        "provenance": "vendor-spec",
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
      },
      "fp32": {
        "value": 66.9,
        "provenance": "vendor-spec",
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01)"
      },
      "fp16": {
        "value": 133.8,
        "provenance": "vendor-spec",
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01) (non-tensor FP16 = 2x FP32, whitepaper Table 2)"
      },
      "bf16": {
        "value": 133.8,
        "provenance": "vendor-spec",
        "source": "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense, no sparsity) and Hopper architecture whitepaper (V1.01) (non-tensor BF16 = 2x FP32, whitepaper Table 2)"
      }
    }
  },
  "sustained_tflops": {
    "tensor_core": {
      "bf16": {
        "value": 727.0,
        "provenance": "measured",
        "source": "stas00/ml-engineering compute/accelerator/benchmarks/README.md (mamf-finder.py, 'How close it gets' and 'Measure while the other GPUs compute'): MSMF, the Maximum Sustainable Matmul FLOPS of a GPU soaked to its saturated clock: measured on H200 (the same GH100 compute, 132 SMs, 700 W, as H100 SXM): 'On 8 H200s the default --search auto ... gave a node MSMF of 727 TFLOPS against a median of 752' with every other GPU of the node running a matmul, the way training loads it; the node figure is the slowest GPU, 'since synchronous training runs at its pace'. Single-GPU runs with idle siblings gave 743-746 (MSMF) and 843-850 (MAMF, the boost burst); the older MAMF table's 794.5 for H100 SXM is a burst figure. Carried to H100 SXM: same die, clocks and power limit; only the HBM differs, which a compute-bound GEMM does not use."
      },
      "fp8": {
        "value": 1330.0,
        "provenance": "measured",
        "source": "stas00/ml-engineering compute/accelerator/benchmarks/README.md (mamf-finder.py, 'How close it gets' and 'Measure while the other GPUs compute'): MSMF, the Maximum Sustainable Matmul FLOPS of a GPU soaked to its saturated clock: measured on H200: single-GPU FP8 MSMF 'about 1330' to 'about 1337' TFLOPS (the same README, on the K walk), through torch._scaled_mm, read as its default split accumulator; no node figure published for FP8. Carried to H100 SXM: same die, clocks and power limit; only the HBM differs, which a compute-bound GEMM does not use."
      }
    }
  },
  "sustained_clock_fraction": {
    "value": 0.859,
    "provenance": "measured",
    "source": "727 / 846.5 TFLOP/s, two BF16 figures of one tool on one GPU model: mamf-finder's MSMF on an H200 node with every GPU computing (727, sustained_tflops above: the board pinned at its 700 W limit, the clock settled below boost) over its MAMF on a single H200 (843-850, midpoint 846.5: the best shapes run as short bursts at the boost clock with the board below its power limit), stas00/ml-engineering compute/accelerator/benchmarks/README.md. The ratio of the two is the sustained over the burst clock of the tensor cores. The BF16 GEMM terms (OpenXLA table), the FP8 terms (public tables) and attention_tflops (FlashAttention-3 paper) were all measured in short benchmarks, so tensor-core kernels run at this fraction of them (src/kernels/kernel_predictor.cpp). Carried to H100 SXM: same GH100 compute, clocks and power limit."
  },
  "gemm_efficiency": {
    "tensor_core": {
      "peak_fraction": {
        "value": 0.89,
        "provenance": "measured",
        "source": "fitted by `perfsim calibrate gemm --table tests/data/kernels/xla-h100/xla-h100-gemm-bf16.csv --device H100-SXM --dtype bf16` on OpenXLA's measured H100 GEMM table (tensorflow/tensorflow third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h @ 372d578b, 375 bf16 GEMMs); 5-fold CV GMAE 4.5%"
      },
      "pipeline_depth_k": {
        "value": 192,
        "provenance": "measured",
        "source": "fitted by `perfsim calibrate gemm --table tests/data/kernels/xla-h100/xla-h100-gemm-bf16.csv --device H100-SXM --dtype bf16` on OpenXLA's measured H100 GEMM table (tensorflow/tensorflow third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h @ 372d578b, 375 bf16 GEMMs); 5-fold CV GMAE 4.5%"
      },
      "fixed_latency_us": {
        "value": 5.5,
        "provenance": "measured",
        "source": "fitted by `perfsim calibrate gemm --table tests/data/kernels/xla-h100/xla-h100-gemm-bf16.csv --device H100-SXM --dtype bf16` on OpenXLA's measured H100 GEMM table (tensorflow/tensorflow third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h @ 372d578b, 375 bf16 GEMMs); 5-fold CV GMAE 4.5%"
      }
    },
    "tensor_core_fp8": {
      "peak_fraction": {
        "value": 0.83,
        "provenance": "measured",
        "source": "fitted by `perfsim calibrate gemm --table tests/data/kernels/hopper-gemm-public/tilelang-h800-k-sweep.csv --table tests/data/kernels/hopper-gemm-public/cublaslt-fp8-8192-h100.csv --table tests/data/kernels/hopper-gemm-public/vllm-pr49363-h100-small-m.csv --device H100-SXM --dtype fp8` on 24 measured FP8 GEMMs (TileLang on H800 SXM, cuBLASLt and vLLM on H100; tests/data/kernels/hopper-gemm-public/README.md); 5-fold CV GMAE 10.1%"
      },
      "pipeline_depth_k": {
        "value": 384,
        "provenance": "measured",
        "source": "fitted by `perfsim calibrate gemm --table tests/data/kernels/hopper-gemm-public/tilelang-h800-k-sweep.csv --table tests/data/kernels/hopper-gemm-public/cublaslt-fp8-8192-h100.csv --table tests/data/kernels/hopper-gemm-public/vllm-pr49363-h100-small-m.csv --device H100-SXM --dtype fp8` on 24 measured FP8 GEMMs (TileLang on H800 SXM, cuBLASLt and vLLM on H100; tests/data/kernels/hopper-gemm-public/README.md); 5-fold CV GMAE 10.1%"
      },
      "fixed_latency_us": {
        "value": 6.5,
        "provenance": "measured",
        "source": "fitted by `perfsim calibrate gemm --table tests/data/kernels/hopper-gemm-public/tilelang-h800-k-sweep.csv --table tests/data/kernels/hopper-gemm-public/cublaslt-fp8-8192-h100.csv --table tests/data/kernels/hopper-gemm-public/vllm-pr49363-h100-small-m.csv --device H100-SXM --dtype fp8` on 24 measured FP8 GEMMs (TileLang on H800 SXM, cuBLASLt and vLLM on H100; tests/data/kernels/hopper-gemm-public/README.md); 5-fold CV GMAE 10.1%"
      },
      "split_accumulator_time_factor": {
        "value": 1.15,
        "provenance": "estimate",
        "source": "torchao issue pytorch/ao#2377 reports 1.1x to 1.2x faster FP8 GEMMs with fast accumulation than with the split (FP32-promoted) accumulator; the midpoint 1.15. Transformer Engine runs dgrad and wgrad with the split accumulator (_2X_ACC_DGRAD/_2X_ACC_WGRAD = True), fprop with fast accumulation"
      }
    }
  },
  "attention_tflops": {
    "implementation": "cuDNN fused attention (Transformer Engine's choice on Hopper)",
    "head_dim": 128,
    "dtypes": [
      "bf16",
      "fp16"
    ],
    "sequence_lengths": [
      512,
      1024,
      2048,
      4096,
      8192,
      16384
    ],
    "forward": [
      497,
      574,
      617,
      609,
      600,
      595
    ],
    "forward_causal": [
      315,
      410,
      484,
      518,
      529,
      539
    ],
    "backward": [
      305,
      408,
      465,
      499,
      518,
      516
    ],
    "provenance": "measured",
    "source": "Shah et al. 2024, FlashAttention-3 (arXiv:2407.08608), Fig. 5 (forward, head dim 128, without and with causal mask) and Fig. 6 (backward, head dim 128, without mask), the cuDNN bars, H100 80GB SXM5, BF16/FP16, batch x sequence = 16k tokens, 16 heads; FLOPs counted as those papers count them (causal: half). Causal backward not measured there: derived (kernels/attention_model.hpp)."
  }
}
)json";

}  // namespace

DefaultScenarioFiles default_scenario_files() {
  return {{"configs/models/llama3-70b.json", kDefaultModelJson},
          {"configs/topologies/hgx-h100-8node.json", kDefaultTopologyJson},
          {"configs/devices/H100-SXM.json", kDefaultDeviceJson}};
}

}  // namespace perfsim::generators::llm
