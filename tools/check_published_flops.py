#!/usr/bin/env python3
"""Check the model shapes of the published run tables against the sources' own FLOP counts.

    python3 tools/check_published_flops.py

NeMo and Megatron-Bridge publish both tokens/s/GPU and model TFLOP/s/GPU for every row, so
their ratio is the FLOPs per token the source counted. This script recomputes that figure from
the shapes the rows give (configs/models or inline columns) and prints the relative difference
under two conventions: every attention score counted (NeMo 24.07) and causal half of them
(Megatron-Bridge). A shape error (layers, FFN width, vocabulary, GQA) shows as a difference of
several percent; a match within 0.5% is evidence the row's shape is the one the source ran.
Standard library only; the measured column perfsim compares against is tokens/s either way.
"""
import csv
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Model TFLOP/s per GPU as published next to the tokens/s of the same row (same sources as the
# CSV headers name).
SOURCE_TFLOPS = {
    "nemo2407-gpt3-5b-64gpu": 736,
    "nemo2407-gpt3-20b-64gpu": 750,
    "nemo2407-gpt3-175b-128gpu": 782,
    "nemo2407-gpt3-175b-512gpu": 842,
    "nemo2407-llama2-7b-8gpu": 776,
    "nemo2407-llama2-13b-16gpu": 754,
    "nemo2407-llama2-70b-64gpu": 759,
    "nemo2407-nemotron-8b-64gpu": 653,
    "nemo2407-nemotron-22b-64gpu": 554,
    "nemo2407-nemotron-340b-128gpu": 678,
    "nemo2407-llama3-8b-8gpu": 697,
    "nemo2407-llama3-70b-64gpu": 738,
    "mbridge2511-llama3-70b-64gpu": 719,
    "mbridge2511-llama31-405b-1024gpu": 737,
    "mbridge2602-llama3-70b-64gpu": 728,
    "mbridge2602-llama31-405b-1024gpu": 784,
}

SHAPE = ["layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len", "gated_ffn"]


def shape_of(row):
    shape = {}
    if row.get("model"):
        with open(os.path.join(ROOT, "configs", "models", row["model"] + ".json")) as handle:
            shape = {key: value for key, value in json.load(handle).items() if key in SHAPE}
    for key in SHAPE:
        if row.get(key):
            shape[key] = int(row[key])
    shape.setdefault("kv_heads", shape["heads"])
    shape.setdefault("ffn_hidden", 4 * shape["hidden"])
    shape.setdefault("gated_ffn", 0)
    return shape


def flops_per_token(shape, causal):
    h, s, layers = shape["hidden"], shape["seq_len"], shape["layers"]
    head_dim = h / shape["heads"]
    projections = 2 * h * (shape["heads"] + 2 * shape["kv_heads"]) * head_dim + 2 * h * h
    ffn = 2 * h * shape["ffn_hidden"] * (3 if shape["gated_ffn"] else 2)
    attention = (2 if causal else 4) * s * h
    forward = layers * (projections + ffn + attention) + 2 * h * shape["vocab"]
    return 3 * forward  # forward + backward, no recomputation counted


def main():
    worst = 0.0
    for name in ("published-nemo-24.07-h100.csv", "published-megatron-bridge-h100.csv"):
        with open(os.path.join(ROOT, "configs", "validation", name)) as handle:
            rows = csv.DictReader(line for line in handle if not line.startswith("#"))
            for row in rows:
                implied = SOURCE_TFLOPS[row["name"]] * 1e12 / float(
                    row["measured_tokens_per_s_per_gpu"])
                shape = shape_of(row)
                full = implied / flops_per_token(shape, False) - 1
                causal = implied / flops_per_token(shape, True) - 1
                worst = max(worst, min(abs(full), abs(causal)))
                print(f"{row['name']:34s} source {implied / 1e9:8.1f} GFLOP/token; "
                      f"shape: full attention {100 * full:+6.2f}%, causal {100 * causal:+6.2f}%")
    print(f"largest difference under the closer convention: {100 * worst:.2f}%")
    return 0 if worst < 0.005 else 1


if __name__ == "__main__":
    sys.exit(main())
