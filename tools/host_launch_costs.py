#!/usr/bin/env python3
"""Host (CPU) time of one eager PyTorch op that launches one kernel, and of one communication
call, measured on the real DLRM Kineto traces (8x V100-SXM2, param et_replay fixtures; see
../shared/data/traces/README.md). These are the measured host costs perfsim's generated LLM
workloads can run with (configs/assets/host_launch_dlrm_v100.json).

    python3 tools/host_launch_costs.py ../shared/data/traces/param-dlrm-8xV100/dlrm_kineto.tar.gz

Rule (fixed before any LLM run was compared with it): on every rank and CPU thread inside the
ProfilerStep window, the top-level cpu_ops (not nested in another cpu_op) that call
cudaLaunchKernel exactly once and make no blocking runtime call (memcpy, synchronize, a call
over 100 us); an op's host time is its duration plus the gap since the previous top-level op of
its thread (gaps over 100 us, where the thread waited for something else, are left out), less
the profiler's 2 us per recorded CPU event (seed 000 Sec. 4.3.3; LaunchParameters). Per op:
the median of those. Per communication call: the median host time of the top-level c10d::*
and record_param_comms ops, less the per-op figure (what a collective costs beyond an op).

Standard library only.
"""
import json
import statistics
import sys
import tarfile
from collections import defaultdict

PROFILER_CPU_EVENT_US = 2.0
LONGEST_GAP_US = 100.0
BLOCKING = {"cudaMemcpyAsync", "cudaMemcpy", "cudaStreamSynchronize", "cudaDeviceSynchronize"}


def traces(path):
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            if member.name.endswith(".json"):
                yield member.name, json.load(archive.extractfile(member))


def top_level(ops):
    ops = sorted(ops, key=lambda e: (e["ts"], -e["dur"]))
    tops, nested_count, end = [], [], -1
    for event in ops:
        if event["ts"] >= end:
            tops.append(event)
            nested_count.append(1)
            end = event["ts"] + event["dur"]
        else:
            nested_count[-1] += 1
    return tops, nested_count


def host_samples(trace):
    events = trace["traceEvents"]
    step = next(e for e in events if e.get("name", "").startswith("ProfilerStep"))
    begin, end = step["ts"], step["ts"] + step["dur"]
    runtime = defaultdict(list)
    ops = defaultdict(list)
    for event in events:
        if not begin <= event.get("ts", -1) <= end:
            continue
        if event.get("cat") == "cuda_runtime":
            runtime[event["tid"]].append(event)
        elif event.get("cat") == "cpu_op":
            ops[event["tid"]].append(event)
    one_launch, communication = [], []
    for tid, thread_ops in ops.items():
        tops, nested_count = top_level(thread_ops)
        previous_end = None
        for op, events_inside in zip(tops, nested_count):
            gap = None if previous_end is None else op["ts"] - previous_end
            previous_end = op["ts"] + op["dur"]
            if gap is None or gap > LONGEST_GAP_US:
                continue
            calls = [r for r in runtime[tid] if op["ts"] <= r["ts"] <= op["ts"] + op["dur"]]
            if any(r["name"] in BLOCKING or r["dur"] > LONGEST_GAP_US for r in calls):
                continue
            host_us = op["dur"] + gap - PROFILER_CPU_EVENT_US * events_inside
            if op["name"].startswith("c10d::") or op["name"] == "record_param_comms":
                communication.append(host_us)
            elif sum(r["name"] == "cudaLaunchKernel" for r in calls) == 1:
                one_launch.append(host_us)
    return one_launch, communication


def main():
    one_launch, communication = [], []
    for _, trace in traces(sys.argv[1]):
        ops, calls = host_samples(trace)
        one_launch += ops
        communication += calls
    per_op_us = statistics.median(one_launch)
    per_call_us = statistics.median(communication)
    print(f"one-kernel ops: {len(one_launch)} samples, median host time {per_op_us:.1f} us "
          f"(quartiles {statistics.quantiles(one_launch, n=4)[0]:.1f}.."
          f"{statistics.quantiles(one_launch, n=4)[2]:.1f})")
    print(f"communication calls: {len(communication)} samples, median host time "
          f"{per_call_us:.1f} us, {per_call_us - per_op_us:.1f} us beyond an op")


if __name__ == "__main__":
    main()
