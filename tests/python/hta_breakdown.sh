#!/usr/bin/env bash
# perfsim's Kineto timelines loaded by Holistic Trace Analysis (holistictraceanalysis on PyPI,
# in a virtual environment under the build folder, kept between runs): HTA's temporal
# breakdown of every rank must agree with perfsim's own breakdown of that rank.
#   hta_breakdown.sh PERFSIM MPIEXEC SOURCE_DIR VENV_DIR
# Exit 77 (skipped) only when PyPI cannot be reached; every other failure fails.
set -euo pipefail
perfsim=$1 mpiexec=$2 source_dir=$3 venv=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import hta" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check holistictraceanalysis; then
    echo "hta_breakdown: cannot install holistictraceanalysis from PyPI (no network?): skipped"
    exit 77
  fi
fi

cd "$work"
# 8 ranks in two pipeline stages with tensor and data parallelism: compute, NCCL collectives
# and pipeline transfers on several streams, and two different rank classes.
"$mpiexec" -n 2 "$perfsim" simulate --model "$source_dir/configs/models/llama3-8b.json" \
  --topology "$source_dir/configs/topologies/hgx-h100.json" --device H100-SXM --tp 2 --pp 2 \
  --dp 2 --global-batch 8 --results "" --quiet --format json \
  --timeline traces --timeline-format kineto > run.json
"$mpiexec" -n 2 "$perfsim" simulate --model "$source_dir/configs/models/llama3-8b.json" \
  --topology "$source_dir/configs/topologies/hgx-h100.json" --device H100-SXM --tp 2 --pp 2 \
  --dp 2 --global-batch 8 --results "" --quiet --format json \
  --timeline picked --timeline-format kineto --timeline-ranks 1,4-5 > /dev/null

# HTA rounds fractional timestamps inward to whole us by default (a workaround for
# overlapping events in PyTorch's ns traces); perfsim's events do not overlap on a stream, so
# keep their ns digits.
HTA_DISABLE_NS_ROUNDING=1 "$venv/bin/python" - <<'PY'
import json, os
from hta.trace_analysis import TraceAnalysis

report = json.load(open("run.json"))
world = report["ranks"]
assert sorted(os.listdir("picked")) == ["rank-1.json", "rank-4.json", "rank-5.json"], \
    os.listdir("picked")
perfsim = {}
for rank_class in report["rank_classes"]:
    for first, last in rank_class["ranks"]:
        for rank in range(first, last + 1):
            perfsim[rank] = rank_class
assert sorted(perfsim) == list(range(world)), sorted(perfsim)

breakdown = TraceAnalysis(trace_dir="traces").get_temporal_breakdown(visualize=False)
assert sorted(breakdown["rank"]) == list(range(world)), list(breakdown["rank"])
failures = []
for row in breakdown.itertuples():
    mine = perfsim[row.rank]
    trace = json.load(open(f"traces/rank-{row.rank}.json"))
    kernels = sum(1 for e in trace["traceEvents"] if e.get("ph") == "X" and e["pid"] == 0)
    # Each event's ts and dur are printed to 0.001 us: the sums can differ by that per kernel.
    tolerance_us = 0.001 * kernels
    hta_busy = row._5 - row._2  # kernel_time(us) - idle_time(us): union of all kernels
    compute = mine["embedding_lookup_us"] + mine["gemm_us"] + mine["memory_us"] + mine["other_us"]
    checks = {
        # GPU busy: the union over every stream of every kernel and collective.
        "busy": (hta_busy, mine["gpu_busy_us"]),
        # Compute: perfsim's non-communication kernels (one compute stream, so no overlap).
        "compute": (row._3, compute),
        # HTA's non-compute: busy time in which no compute kernel runs (communication alone).
        "non_compute": (row._4, mine["gpu_busy_us"] - compute),
    }
    for name, (hta, own) in checks.items():
        if abs(hta - own) > tolerance_us:
            failures.append(f"rank {row.rank} {name}: HTA {hta:.3f} us, perfsim {own:.3f} us "
                            f"(tolerance {tolerance_us:.3f} us)")
    # HTA's idle counts from the first kernel's start to the last kernel's end; perfsim's over
    # the whole iteration, so it holds HTA's plus the GPU-free head and tail.
    if not row._2 <= mine["gpu_idle_us"] + tolerance_us:
        failures.append(f"rank {row.rank}: HTA idle {row._2} us above perfsim's "
                        f"{mine['gpu_idle_us']} us")
    if not row._5 <= mine["iteration_us"] + tolerance_us:
        failures.append(f"rank {row.rank}: HTA kernel span {row._5} us beyond the iteration")
    print(f"rank {row.rank}: idle {row._2:.3f} / compute {row._3:.3f} / non-compute "
          f"{row._4:.3f} us (HTA); perfsim busy {mine['gpu_busy_us']:.3f}, compute "
          f"{compute:.3f}, idle over the iteration {mine['gpu_idle_us']:.3f} us")
assert not failures, "\n".join(failures)
print(f"HTA temporal breakdown matches perfsim on {world} ranks")
PY
