#!/usr/bin/env python3
"""Cost of one more layer per micro-batch in vTrain's pipeline-free rows, free of the per-
micro-batch and per-iteration terms: per (hidden, TP, micro-batch) the least-squares slope of
the time per micro-batch against the layer count (the rows of one key differ in layers and
batch only). With a `perfsim validate runs --format csv` output the same slope of perfsim's
prediction (`predicted_s`, host costs included) and of `simulated_s` (kernel, collective and
engine models alone: the GPU side). Then the median time per layer and micro-batch by GPU count
at equal (hidden, micro-batch, TP): the number of training processes on the host, at equal
work per process.

    perfsim validate runs T.csv --cv 5 --format csv > pred.csv
    python3 tools/vtrain_layer_slopes.py T.csv [pred.csv]

Standard library only.
"""
import csv
import statistics
import sys
from collections import defaultdict


def rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(line for line in handle if not line.startswith("#")))


def slope(points):
    """Least-squares slope of (x, y) points; None with fewer than two distinct x."""
    xs = [x for x, _ in points]
    if len(set(xs)) < 2:
        return None
    mean_x = sum(xs) / len(xs)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def cell(value):
    return "     -" if value is None else f"{value:6.2f}"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: vtrain_layer_slopes.py RUNS.csv [pred.csv]")
    table = [row for row in rows(sys.argv[1]) if row["pp"] == "1"]
    predictions = {p["name"]: p for p in rows(sys.argv[2])} if len(sys.argv) == 3 else {}
    series = defaultdict(lambda: defaultdict(list))
    by_gpus = defaultdict(list)
    for row in table:
        micro_batch = int(row["micro_batch"])
        micro_batches = int(row["global_batch"]) // (micro_batch * int(row["dp"]))
        layers = int(row["layers"])
        key = (int(row["hidden"]), int(row["tp"]), micro_batch)
        per_micro_batch_ms = 1e3 / micro_batches
        series[key]["measured"].append(
            (layers, float(row["measured_iteration_s"]) * per_micro_batch_ms))
        prediction = predictions.get(row["name"])
        if prediction and prediction.get("predicted_s"):
            for column in ("predicted_s", "simulated_s"):
                series[key][column].append(
                    (layers, float(prediction[column]) * per_micro_batch_ms))
        by_gpus[(key[0], micro_batch, key[1], int(row["gpus"]))].append(
            float(row["measured_iteration_s"]) * per_micro_batch_ms / layers)
    print("ms per layer and micro-batch: slope of the time per micro-batch over layers (pp 1)")
    print("hidden TP mb  rows  measured  perfsim  GPU-side (simulated_s)")
    for key in sorted(series):
        values = series[key]
        print(f"{key[0]:6d} {key[1]:2d} {key[2]:2d}  {len(values['measured']):4d}  "
              f"{cell(slope(values['measured']))}    {cell(slope(values['predicted_s']))}   "
              f"{cell(slope(values['simulated_s']))}")
    print("median ms per layer and micro-batch by GPU count (processes on the host), pp 1:")
    grouped = defaultdict(list)
    full_node, fewer = defaultdict(list), defaultdict(list)
    for (hidden, micro_batch, tp, gpus), values in sorted(by_gpus.items()):
        grouped[(hidden, micro_batch, tp)].append(
            f"{gpus} GPUs {statistics.median(values):.2f} (n={len(values)})")
        (full_node if gpus == 8 else fewer)[(hidden, micro_batch, tp)].extend(values)
    for (hidden, micro_batch, tp), cells in sorted(grouped.items()):
        print(f"  hidden {hidden}, micro-batch {micro_batch}, TP {tp}: " + "; ".join(cells))
    ratios = [statistics.median(full_node[key]) / statistics.median(fewer[key])
              for key in sorted(full_node) if key in fewer]
    if ratios:
        print(f"8 GPUs over fewer at equal (hidden, micro-batch, TP), {len(ratios)} keys: "
              f"median {statistics.median(ratios):.3f}, range {min(ratios):.3f}..{max(ratios):.3f}")


if __name__ == "__main__":
    main()
