#!/usr/bin/env bash
# perfsim's Kineto timelines loaded by Holistic Trace Analysis (holistictraceanalysis on PyPI,
# in a virtual environment under the build folder, kept between runs): HTA's temporal
# breakdown of every rank must agree with perfsim's own breakdown of that rank.
#   hta_breakdown.sh PERFSIM MPIEXEC SOURCE_DIR VENV_DIR [SHARED_DATA_DIR]
# Exit 77 (skipped) only when PyPI cannot be reached; every other failure fails.
set -euo pipefail
perfsim=$1 mpiexec=$2 source_dir=$3 venv=$4 shared_data=${5:-$3/../shared/data}
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
cases="traces:run.json"
# A real 8-rank DLRM profile replayed unfolded: every rank simulated, and the timelines of
# process 1's ranks reach process 0 over MPI. Where the shared data is checked out.
dlrm="$shared_data/traces/param-dlrm-8xV100/dlrm_kineto.tar.gz"
if [ -f "$dlrm" ]; then
  "$mpiexec" -n 2 "$perfsim" simulate --kineto "$dlrm" --results "" --quiet --format json \
    --timeline dlrm --timeline-format kineto > dlrm.json
  cases="$cases dlrm:dlrm.json"
else
  echo "hta_breakdown: $dlrm not found: the DLRM replay case is not checked"
fi

# HTA rounds fractional timestamps inward to whole us by default (a workaround for
# overlapping events in PyTorch's ns traces); perfsim's events do not overlap on a stream, so
# keep their ns digits.
HTA_DISABLE_NS_ROUNDING=1 "$venv/bin/python" - $cases <<'PY'
import json, os, re, sys
from hta.trace_analysis import TraceAnalysis

assert sorted(os.listdir("picked")) == ["rank-1.json", "rank-4.json", "rank-5.json"], \
    os.listdir("picked")
MEMORY_NAME = re.compile(r"^(Memcpy|Memset)")  # HTA's memory kernels: neither side of the split
failures = []


def check_case(trace_dir, report_path):
    report = json.load(open(report_path))
    world = report["ranks"]
    perfsim = {}
    for rank_class in report["rank_classes"]:
        for first, last in rank_class["ranks"]:
            for rank in range(first, last + 1):
                perfsim[rank] = rank_class
    assert sorted(perfsim) == list(range(world)), sorted(perfsim)
    breakdown = TraceAnalysis(trace_dir=trace_dir).get_temporal_breakdown(visualize=False)
    assert sorted(breakdown["rank"]) == list(range(world)), list(breakdown["rank"])
    for row in breakdown.itertuples():
        mine = perfsim[row.rank]
        events = json.load(open(f"{trace_dir}/rank-{row.rank}.json"))["traceEvents"]
        kernels = [e for e in events if e.get("ph") == "X" and e["pid"] == 0]
        # Each event's ts and dur are printed to 0.001 us: sums can differ by that per kernel.
        tolerance_us = 0.001 * len(kernels)
        idle, compute_hta, non_compute, span = row._2, row._3, row._4, row._5
        checks = {"busy": (span - idle, mine["gpu_busy_us"])}  # union of every kernel
        # The split where HTA and perfsim sort every kernel alike: perfsim counts copies as
        # compute, HTA as memory, so traces with Memcpy/Memset kernels check busy time only.
        if not any(MEMORY_NAME.match(e["name"]) for e in kernels):
            compute = sum(mine[k] for k in ("embedding_lookup_us", "gemm_us", "memory_us",
                                            "other_us"))
            checks["compute"] = (compute_hta, compute)  # one compute stream: sum = union
            checks["non_compute"] = (non_compute, mine["gpu_busy_us"] - compute)
        for name, (hta, own) in checks.items():
            if abs(hta - own) > tolerance_us:
                failures.append(f"{trace_dir} rank {row.rank} {name}: HTA {hta:.3f} us, "
                                f"perfsim {own:.3f} us (tolerance {tolerance_us:.3f} us)")
        # HTA counts idle from the first kernel's start to the last kernel's end, perfsim over
        # the whole iteration: perfsim's holds HTA's plus the kernel-free head and tail.
        if idle > mine["gpu_idle_us"] + tolerance_us or span > mine["iteration_us"] + tolerance_us:
            failures.append(f"{trace_dir} rank {row.rank}: HTA idle {idle} us in a span of "
                            f"{span} us; perfsim {mine['gpu_idle_us']} us in "
                            f"{mine['iteration_us']} us")
        print(f"{trace_dir} rank {row.rank}: HTA idle {idle:.3f} compute {compute_hta:.3f} "
              f"non-compute {non_compute:.3f} us; perfsim busy {mine['gpu_busy_us']:.3f}, idle "
              f"{mine['gpu_idle_us']:.3f} us; checked {', '.join(checks)}")


for case in sys.argv[1:]:
    check_case(*case.split(":"))
assert not failures, "\n".join(failures)
print("HTA's temporal breakdown agrees with perfsim's on every rank")
PY
