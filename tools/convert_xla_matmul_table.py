#!/usr/bin/env python3
"""Convert OpenXLA's measured GEMM throughput table (matmul_interpolator_data.h, a text proto of
FLOP/s per batched GEMM shape and GPU generation) into the DeepBench-style GEMM CSVs that
`perfsim calibrate gemm` reads (columns batch, M, N, K, time_ms, tflops).

    python3 tools/convert_xla_matmul_table.py SAVED_HEADER [OUT_DIR]

SAVED_HEADER is a local copy of tensorflow/tensorflow
third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h (the script does not download
anything). OUT_DIR defaults to tests/data/kernels/xla-h100. Standard library only.

Each entry {b, m, n, k, flops {key: "<lhs>x<rhs>-><out>" value: FLOP/s}} becomes one row per
dtype key: time = 2 b m n k / FLOP/s (the table stores FLOP/s derived from a measured time,
so this recovers that time). One file per (SM key, dtype key) that has a name below.
"""
import csv
import os
import re
import sys

GPU_OF_SM = {"sm_90": "h100"}
DTYPE_OF_KEY = {"bf16xbf16->bf16": "bf16", "f32xf32->f32": "f32"}

TOKEN = re.compile(
    r'key:\s*"(?P<sm>sm_\d+)"'
    r'|\b(?P<dim>[bmnk]):\s*(?P<size>\d+)'
    r'|flops\s*\{\s*key:\s*"(?P<dtype>[^"]+)"\s*value:\s*(?P<flops>[0-9.eE+]+)\s*\}')


def parse_entries(text):
    """Yields (sm, b, m, n, k, {dtype key: FLOP/s}) in file order."""
    sm = None
    entry = None
    for token in TOKEN.finditer(text):
        if token.group("sm"):
            if entry:
                yield entry
            sm, entry = token.group("sm"), None
        elif token.group("dim"):
            dim, size = token.group("dim"), int(token.group("size"))
            if dim == "b":
                if entry:
                    yield entry
                entry = {"sm": sm, "flops": {}}
            if entry is None:
                raise ValueError("dimension %s before any b:" % dim)
            entry[dim] = size
        else:
            entry["flops"][token.group("dtype")] = float(token.group("flops"))
    if entry:
        yield entry


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    out_dir = argv[2] if len(argv) > 2 else os.path.join("tests", "data", "kernels", "xla-h100")
    with open(argv[1]) as handle:
        entries = list(parse_entries(handle.read()))
    rows = {}
    for entry in entries:
        for key, flops in entry["flops"].items():
            gpu, dtype = GPU_OF_SM.get(entry["sm"]), DTYPE_OF_KEY.get(key)
            if gpu is None or dtype is None:
                print("skipped %s %s (no output name)" % (entry["sm"], key), file=sys.stderr)
                continue
            b, m, n, k = entry["b"], entry["m"], entry["n"], entry["k"]
            time_s = 2.0 * b * m * n * k / flops
            rows.setdefault((gpu, dtype), []).append(
                [b, m, n, k, "%.9g" % (time_s * 1e3), "%.6g" % (flops / 1e12)])
    os.makedirs(out_dir, exist_ok=True)
    for (gpu, dtype), table in sorted(rows.items()):
        table.sort()
        path = os.path.join(out_dir, "xla-%s-gemm-%s.csv" % (gpu, dtype))
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["batch", "M", "N", "K", "time_ms", "tflops"])
            writer.writerows(table)
        print("%s: %d rows" % (path, len(table)))


if __name__ == "__main__":
    main(sys.argv)
