#!/usr/bin/env python3
"""Writes the small hand-made Kineto traces of this folder (run from anywhere; deterministic).

job2_rank{0,1}.json: ranks 0 and 1 of a 2-rank job (distributedInfo), one ProfilerStep of
1000 us starting at T. On each rank:
  - a kernel queued before profiling (no runtime call in the trace), NCCL, on stream 24;
  - aten::mm launching one GEMM (200 us);
  - CompiledFunctionBackward launching three all-reduces through record_param_comms with the
    args newer PyTorch writes (In/Out msg nelems, Group size, dtype, Process Group Ranks), of
    1024, 2048 and 4096 floats, and one elementwise kernel between them;
  - [memory] instant events: allocated rises to 3 MiB then falls, reserved to 4 MiB.
deep_queue_rank0.json: one rank whose CPU runs far ahead of the GPU: 40 launches of 1 us
each, 100 us apart in GPU time (each kernel lasts 100 us), then a cudaStreamSynchronize.
"""
import json
import os

T = 1_000_000
HERE = os.path.dirname(os.path.abspath(__file__))


def x(name, cat, ts, dur, tid=1, args=None):
    event = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}
    if args is not None:
        event["args"] = args
    return event


def kernel(name, ts, dur, corr, stream):
    return x(name, "kernel", ts, dur, tid=stream,
             args={"device": 0, "stream": stream, "correlation": corr})


def launch(ts, corr, name="cudaLaunchKernel"):
    return x(name, "cuda_runtime", ts, 4, args={"correlation": corr})


def memory(ts, nbytes, allocated, reserved):
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1,
            "tid": 1, "ts": ts,
            "args": {"Device Type": 1, "Device Id": 0, "Addr": 1000 + ts, "Bytes": nbytes,
                     "Total Allocated": allocated, "Total Reserved": reserved}}


def job2(rank):
    ev = [
        kernel("ncclKernel_AllReduce_RING_LL_Sum_float", T - 40, 60, 1, 24),
        x("ProfilerStep#3", "user_annotation", T, 1000),
        x("aten::mm", "cpu_op", T + 10, 20,
          args={"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}),
        launch(T + 15, 10),
        kernel("volta_sgemm_128x64_nn", T + 30, 200, 10, 7),
        x("CompiledFunctionBackward", "cpu_op", T + 40, 400),
    ]
    for i in range(3):
        start = T + 50 + 100 * i
        nelems = 1024 << i
        ev.append(x("record_param_comms", "cpu_op", start, 40, args={
            "Collective name": "allreduce", "dtype": "Float", "In msg nelems": nelems,
            "Out msg nelems": nelems, "Group size": 2, "Process Group Name": "0",
            "Process Group Ranks": "[0, 1]", "Rank": rank}))
        ev.append(launch(start + 10, 20 + i))
        ev.append(kernel("ncclKernel_AllReduce_RING_LL_Sum_float", T + 300 + 100 * i, 50,
                         20 + i, 24))
        ev.append(launch(start + 60, 30 + i))
        ev.append(kernel("vectorized_elementwise_kernel", T + 240 + 100 * i, 20, 30 + i, 7))
    ev += [memory(T + 12, 1 << 20, 1 << 20, 2 << 20), memory(T + 60, 2 << 20, 3 << 20, 4 << 20),
           memory(T + 500, -(2 << 20), 1 << 20, 4 << 20),
           {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1,
            "tid": 1, "ts": T + 20, "args": {"Device Type": 0, "Device Id": -1, "Bytes": 64,
                                              "Total Allocated": 9 << 30, "Total Reserved": 0}}]
    return {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank,
                                                     "world_size": 2},
            "deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-32GB"}],
            "traceEvents": ev}


def deep_queue():
    ev = [x("ProfilerStep#1", "user_annotation", T, 4200)]
    for i in range(40):
        ev.append(x("aten::add", "cpu_op", T + 10 + 2 * i, 2))
        ev.append(x("cudaLaunchKernel", "cuda_runtime", T + 10 + 2 * i, 1,
                    args={"correlation": 100 + i}))
        ev.append(kernel("vectorized_elementwise_kernel", T + 20 + 100 * i, 100, 100 + i, 7))
    ev.append(x("aten::item", "cpu_op", T + 100, 4000))
    ev.append(x("cudaStreamSynchronize", "cuda_runtime", T + 101, 3998,
                args={"correlation": 500}))
    return {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0,
                                                     "world_size": 1},
            "deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-32GB"}],
            "traceEvents": ev}


for name, doc in [("job2_rank0.json", job2(0)), ("job2_rank1.json", job2(1)),
                  ("deep_queue_rank0.json", deep_queue())]:
    with open(os.path.join(HERE, name), "w") as out:
        json.dump(doc, out, indent=0)
        out.write("\n")
