#!/usr/bin/env python3
"""Checks JSON trace files against the Trace Event Format (Google's "Trace Event Format"
document, the format chrome://tracing and ui.perfetto.dev load), with the standard library only.

    trace_event_format.py FILE...   exit 0 when every file conforms, 1 (and the reasons) if not

Checked: the JSON object form ({"traceEvents": [...]}, optional displayTimeUnit ms|ns) or the
array form; per event a known phase and that phase's required keys; ts and dur numeric, finite
and non-negative; pid and tid present; metadata events with their argument; duration events
(B/E) balanced and nested per thread; every flow id started once ("s") and finished once ("f"),
and a flow end bound to its enclosing slice ("bp": "e") lying inside a complete event of its
thread.
"""
import json
import math
import sys
from collections import defaultdict

PHASES = set("BEXiIbneSTpFsftPNODCMRcVv(),") | {"n"}
METADATA_ARG = {"process_name": "name", "process_labels": "labels",
                "process_sort_index": "sort_index", "thread_name": "name",
                "thread_sort_index": "sort_index"}
NEEDS_THREAD = set("BEXiIstfC")


def number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check(trace):
    problems = []
    if isinstance(trace, dict):
        events = trace.get("traceEvents")
        if not isinstance(events, list):
            return ["the object form needs a traceEvents array"]
        unit = trace.get("displayTimeUnit", "ms")
        if unit not in ("ms", "ns"):
            problems.append(f"displayTimeUnit {unit!r} is neither ms nor ns")
    elif isinstance(trace, list):
        events = trace
    else:
        return ["a trace is a JSON object or array"]

    open_slices = defaultdict(list)  # (pid, tid) -> names of open B events
    complete = defaultdict(list)     # (pid, tid) -> (start, end) of X events
    flows = defaultdict(lambda: defaultdict(int))
    bound_ends = []
    for index, event in enumerate(events):
        where = f"event {index}"
        if not isinstance(event, dict):
            problems.append(f"{where}: not an object")
            continue
        phase = event.get("ph")
        if not isinstance(phase, str) or phase not in PHASES:
            problems.append(f"{where}: unknown phase {phase!r}")
            continue
        if phase != "E" and not isinstance(event.get("name"), str):
            problems.append(f"{where} ({phase}): name missing or not a string")
        if "cat" in event and not isinstance(event["cat"], str):
            problems.append(f"{where}: cat is not a string")
        if "args" in event and not isinstance(event["args"], dict):
            problems.append(f"{where}: args is not an object")
        if "pid" not in event:
            problems.append(f"{where} ({phase}): pid missing")
        if phase in NEEDS_THREAD and "tid" not in event:
            problems.append(f"{where} ({phase}): tid missing")
        if phase != "M":
            if not number(event.get("ts")) or event["ts"] < 0:
                problems.append(f"{where} ({phase}): ts {event.get('ts')!r} is not a "
                                "non-negative number")
                continue
        thread = (event.get("pid"), event.get("tid"))
        if phase == "X":
            if not number(event.get("dur")) or event["dur"] < 0:
                problems.append(f"{where}: complete event with dur {event.get('dur')!r}")
            else:
                complete[thread].append((event["ts"], event["ts"] + event["dur"]))
        elif phase == "B":
            open_slices[thread].append(event.get("name"))
        elif phase == "E":
            if not open_slices[thread]:
                problems.append(f"{where}: E without an open B on pid/tid {thread}")
            else:
                open_slices[thread].pop()
        elif phase in "stf":
            if "id" not in event:
                problems.append(f"{where}: flow event without id")
            else:
                flows[(event.get("cat"), event["id"])][phase] += 1
            if phase == "f" and event.get("bp") == "e":
                bound_ends.append((where, thread, event["ts"]))
        elif phase in "iI":
            if event.get("s", "t") not in ("g", "p", "t"):
                problems.append(f"{where}: instant scope {event.get('s')!r}")
        elif phase == "C":
            args = event.get("args")
            if not isinstance(args, dict) or not all(number(v) for v in args.values()):
                problems.append(f"{where}: counter arguments must be numbers")
        elif phase == "M":
            key = METADATA_ARG.get(event.get("name"))
            if key is not None and key not in event.get("args", {}):
                problems.append(f"{where}: {event.get('name')} without args.{key}")
            if event.get("name", "").startswith("thread_") and "tid" not in event:
                problems.append(f"{where}: {event.get('name')} without tid")
    for thread, names in open_slices.items():
        if names:
            problems.append(f"B events never ended on pid/tid {thread}: {names}")
    for (cat, flow_id), phases in flows.items():
        if phases["s"] != 1 or phases["f"] != 1:
            problems.append(f"flow {cat}/{flow_id}: {phases['s']} starts and {phases['f']} "
                            "ends (one of each expected)")
    for where, thread, ts in bound_ends:
        if not any(start <= ts <= end for start, end in complete[thread]):
            problems.append(f"{where}: flow end at {ts} lies in no slice of pid/tid {thread}")
    return problems


def main(paths):
    failed = False
    for path in paths:
        with open(path) as f:
            problems = check(json.load(f))
        for problem in problems[:20]:
            print(f"{path}: {problem}")
        if problems:
            failed = True
            print(f"{path}: {len(problems)} problems")
        else:
            print(f"{path}: conforms to the Trace Event Format")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
