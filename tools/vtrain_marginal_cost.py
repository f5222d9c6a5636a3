#!/usr/bin/env python3
"""Measured against modelled GPU cost of one more sample per layer, from pipeline-free rows of a
`perfsim validate runs --format csv` output: per (hidden, TP, micro-batch), the median time per
layer and micro-batch, measured and `simulated_s` (the kernel, collective and engine models with
no host costs or calibration, so out of sample for any fit), and the slope between two
micro-batch sizes (ms per sample and layer). Where the GPU is the bottleneck (TP 1 at
micro-batch 4-8) the slope is the GPU's marginal cost per sample; where the host is, the measured
slope is flat or negative.

    perfsim validate runs T.csv --cv 5 --format csv > pred.csv
    python3 tools/vtrain_marginal_cost.py T.csv pred.csv

Standard library only.
"""
import csv
import statistics
import sys
from collections import defaultdict


def rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(line for line in handle if not line.startswith("#")))


def main():
    table = {row["name"]: row for row in rows(sys.argv[1])}
    measured, simulated = defaultdict(list), defaultdict(list)
    for prediction in rows(sys.argv[2]):
        row = table[prediction["name"]]
        if row["pp"] != "1":
            continue
        micro_batch = int(row["micro_batch"])
        micro_batches = int(row["global_batch"]) // (micro_batch * int(row["dp"]))
        per = 1e3 / (int(row["layers"]) * micro_batches)
        key = (int(row["hidden"]), int(row["tp"]), micro_batch)
        measured[key].append(float(row["measured_iteration_s"]) * per)
        simulated[key].append(float(prediction["simulated_s"]) * per)
    print("hidden TP  micro-batches  measured ms/sample/layer  modelled (GPU, no host)")
    for hidden, tp, small in sorted(measured):
        large = small * 2
        if (hidden, tp, large) not in measured:
            continue
        slope = [
            (statistics.median(series[(hidden, tp, large)]) -
             statistics.median(series[(hidden, tp, small)])) / small
            for series in (measured, simulated)
        ]
        print(f"{hidden:6d} {tp:2d}  {small} -> {large:<2d}        {slope[0]:+7.3f}"
              f"                  {slope[1]:+7.3f}")


if __name__ == "__main__":
    main()
