#!/usr/bin/env python3
"""Mean signed and absolute error of `perfsim validate runs --format csv` output per value of
each layout column, and the measured time per layer and micro-batch by TP (pipeline-free rows).

    perfsim validate runs T.csv --cv 5 --format csv > pred.csv
    python3 tools/validation_residuals.py T.csv pred.csv

Standard library only.
"""
import csv
import sys
from collections import defaultdict


def rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(line for line in handle if not line.startswith("#")))


def main():
    table = {row["name"]: row for row in rows(sys.argv[1])}
    predictions = [p for p in rows(sys.argv[2]) if p["signed_error"]]
    for column in ("tp", "pp", "dp", "micro_batch", "hidden", "layers", "gpus"):
        groups = defaultdict(list)
        for prediction in predictions:
            groups[table[prediction["name"]][column]].append(float(prediction["signed_error"]))
        cells = []
        for value in sorted(groups, key=lambda v: (len(v), v)):
            errors = groups[value]
            mean = 100 * sum(errors) / len(errors)
            mean_abs = 100 * sum(abs(e) for e in errors) / len(errors)
            cells.append(f"{value}: n={len(errors)} signed {mean:+.1f}% abs {mean_abs:.1f}%")
        print(f"{column:12s} " + "; ".join(cells))
    per_layer = defaultdict(list)
    for row in table.values():
        if row["pp"] != "1":
            continue
        micro_batches = int(row["global_batch"]) // (int(row["micro_batch"]) * int(row["dp"]))
        time_ms = float(row["measured_iteration_s"]) * 1e3
        per_layer[(int(row["micro_batch"]), int(row["tp"]))].append(
            time_ms / (micro_batches * int(row["layers"])))
    print("measured ms per layer and micro-batch (pp 1), median by micro-batch and TP:")
    for key in sorted(per_layer):
        values = sorted(per_layer[key])
        print(f"  micro-batch {key[0]}, TP {key[1]}: {values[len(values) // 2]:.2f} ms")


if __name__ == "__main__":
    main()
