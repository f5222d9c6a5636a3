#!/usr/bin/env bash
# perfsim's timelines against the Trace Event Format (trace_event_format.py, Python standard
# library only): the Chrome form of a synthetic and of an LLM run, and the Kineto form (also
# Trace Event Format). The checker must also reject a trace broken on purpose.
#   chrome_trace_format.sh PERFSIM MPIEXEC SOURCE_DIR
set -euo pipefail
perfsim=$1 mpiexec=$2 source_dir=$3
check="python3 $source_dir/tests/python/trace_event_format.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Collectives across 6 ranks on 2 processes: flows between members of different processes.
"$mpiexec" -n 2 "$perfsim" simulate --ranks 6 --group-size 3 --repetitions 4 --results "" \
  --quiet --timeline synthetic.json > /dev/null
"$mpiexec" -n 2 "$perfsim" simulate --model "$source_dir/configs/models/llama3-8b.json" \
  --topology "$source_dir/configs/topologies/hgx-h100.json" --device H100-SXM --tp 2 --pp 2 \
  --dp 2 --global-batch 8 --results "" --quiet --timeline llm.json --timeline-ranks 0-1,6 \
  > /dev/null
"$mpiexec" -n 2 "$perfsim" simulate --model "$source_dir/configs/models/llama3-8b.json" \
  --topology "$source_dir/configs/topologies/hgx-h100.json" --device H100-SXM --tp 2 --pp 2 \
  --dp 2 --global-batch 8 --results "" --quiet --timeline kineto --timeline-format kineto \
  --timeline-ranks 3 > /dev/null
$check synthetic.json llm.json kineto/rank-3.json

python3 - <<'PY'
import json
trace = json.load(open("synthetic.json"))
pids = {e["pid"] for e in trace["traceEvents"]}
assert pids == set(range(6)), pids
assert any(e["ph"] == "f" for e in trace["traceEvents"]), "no flow arrows between ranks"
pids = {e["pid"] for e in json.load(open("llm.json"))["traceEvents"]}
assert pids == {0, 1, 6}, pids
# Broken on purpose: one slice loses its duration, one flow loses its end.
events = trace["traceEvents"]
next(e for e in events if e["ph"] == "X").pop("dur")
events.remove(next(e for e in events if e["ph"] == "f"))
json.dump(trace, open("broken.json", "w"))
PY
if $check broken.json; then
  echo "the checker accepted a trace without a duration and with a dangling flow"
  exit 1
fi
echo "timelines conform to the Trace Event Format"
