#!/usr/bin/env python3
"""Writes rank{0..3}.json: four Kineto traces whose collectives wait on each other in a cycle.

Rank r all-reduces first with its right neighbour (group {r, r+1 mod 4}), then with its left one
(group {r-1 mod 4, r}), both on NCCL stream 24. Each pair group holds one all-reduce on both of
its members, so the collectives match group by group, yet in stream order rank 0 waits for
rank 1, rank 1 for rank 2, rank 2 for rank 3 and rank 3 for rank 0: the iteration can never
end. perfsim must say so within seconds under any process layout, never hang.
"""
import json
import os

T = 1_000_000
HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = 4


def x(name, cat, ts, dur, tid=1, args=None):
    event = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}
    if args is not None:
        event["args"] = args
    return event


def rank_trace(rank):
    right = sorted([rank, (rank + 1) % RANKS])
    left = sorted([(rank - 1) % RANKS, rank])
    ev = [x("ProfilerStep#1", "user_annotation", T, 1000)]
    for i, group in enumerate([right, left]):
        start = T + 50 + 200 * i
        name = "pair%d%d" % tuple(group)
        ev.append(x("record_param_comms", "cpu_op", start, 40, args={
            "Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1024,
            "Out msg nelems": 1024, "Group size": 2, "Process Group Name": name,
            "Process Group Ranks": json.dumps(group), "Rank": rank}))
        ev.append(x("cudaLaunchKernel", "cuda_runtime", start + 10, 4,
                    args={"correlation": 20 + i}))
        ev.append(x("ncclKernel_AllReduce_RING_LL_Sum_float", "kernel", start + 20, 50, tid=24,
                    args={"device": 0, "stream": 24, "correlation": 20 + i}))
    return {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank,
                                                     "world_size": RANKS},
            "deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-32GB"}],
            "traceEvents": ev}


for rank in range(RANKS):
    with open(os.path.join(HERE, "rank%d.json" % rank), "w") as out:
        json.dump(rank_trace(rank), out, indent=0)
        out.write("\n")
