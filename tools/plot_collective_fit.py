#!/usr/bin/python3
"""Plot measured collective times and the fitted curve per benchmark table (seed 001 Fig. 9).

    /usr/bin/python3 tools/plot_collective_fit.py bench.h5 assets.h5 -o plots/

bench.h5 comes from `perfsim import nccl-tests`, assets.h5 from `perfsim fit`. One PNG (or SVG
with --format svg) per table: left, time against message size; right, bus bandwidth; the
region bounds m1 and m2 as green dashed lines. The curve is evaluated from the eight stored
parameters with the formula of collectives/piecewise_sigmoid.hpp; the points predicted by the
C++ model (/collectives/residuals) are overlaid so a mismatch between the two would show.
Needs the Debian packages python3-h5py and python3-matplotlib.
"""
import argparse
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

BUS_BYTES_PER_GBPS_US = 1e3  # bytes moved in one microsecond at 1 GB/s


def read_table(path, group):
    with h5py.File(path, "r") as f:
        g = f[group]
        table = {}
        for key in g:
            values = g[key][()]
            if values.dtype.kind in ("O", "S"):
                values = np.array([v.decode() if isinstance(v, bytes) else v for v in values])
            table[key] = values
        attributes = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in g.attrs.items()}
    return table, attributes


def bus_factor(collective, n):
    if collective == "all_reduce":
        return 2.0 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "all_to_all", "all_to_allv"):
        return (n - 1) / n
    return 1.0


def curve_time_us(p, bus_bytes):
    """Duration of bus_bytes on the continuous piecewise curve with parameters p."""
    t = np.empty_like(bus_bytes)
    low = bus_bytes <= p["m1"]
    high = bus_bytes >= p["m2"]
    mid = ~(low | high)
    t[low] = p["ts"]
    t[high] = p["ts"] + bus_bytes[high] / (p["bwmax"] * BUS_BYTES_PER_GBPS_US)
    x = np.log2(bus_bytes[mid])
    sigmoid = p["L"] / (1.0 + np.exp(-p["k"] * (x - p["x0"]))) + p["b"]
    t[mid] = bus_bytes[mid] / (10.0 ** sigmoid * BUS_BYTES_PER_GBPS_US)
    return t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench")
    parser.add_argument("assets")
    parser.add_argument("-o", "--output-dir", required=True)
    parser.add_argument("--format", choices=("png", "svg"), default="png")
    args = parser.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)

    curves, _ = read_table(args.assets, "/collectives/curves")
    residuals, _ = read_table(args.assets, "/collectives/residuals")
    with h5py.File(args.bench, "r") as f:
        tables = sorted(f["/benchmarks/collective"].keys())
    written = 0
    for name in tables:
        rows = np.where(curves["name"] == name)[0]
        if len(rows) == 0:
            print(f"{name}: no fitted curve in {args.assets}, skipped", file=sys.stderr)
            continue
        row = rows[0]
        p = {key: float(curves[col][row]) for key, col in
             [("L", "L"), ("x0", "x0"), ("k", "k"), ("b", "b"), ("m1", "m1_bus_bytes"),
              ("m2", "m2_bus_bytes"), ("ts", "ts_us"), ("bwmax", "bwmax_GBps")]}
        bench, attributes = read_table(args.bench, f"/benchmarks/collective/{name}")
        factor = bus_factor(bench["collective"][0], int(bench["n_ranks"][0]))
        sizes = bench["bytes"].astype(float)
        grid = np.logspace(np.log2(sizes.min()), np.log2(sizes.max()), 400, base=2.0)
        fitted = curve_time_us(p, grid * factor)
        mine = residuals["curve"] == name

        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
        for placement, marker in ((0, "o"), (1, "x")):
            sel = bench["in_place"] == placement
            label = "measured, " + ("in-place" if placement else "out-of-place")
            left.loglog(sizes[sel], bench["time_us"][sel], marker, ms=4, label=label, alpha=0.8)
            right.semilogx(sizes[sel], sizes[sel] * factor / bench["time_us"][sel] / 1e3, marker,
                           ms=4, label=label, alpha=0.8)
        left.loglog(grid, fitted, "-", color="k", lw=1.2, label="fitted curve")
        left.loglog(residuals["bytes"][mine], residuals["predicted_us"][mine], ".", color="r",
                    ms=3, label="C++ prediction")
        right.semilogx(grid, grid * factor / fitted / 1e3, "-", color="k", lw=1.2,
                       label="fitted curve")
        for axis in (left, right):
            for bound in (p["m1"], p["m2"]):
                axis.axvline(bound / factor, color="green", ls="--", lw=1)
            axis.set_xlabel("message size (bytes)")
            axis.grid(True, which="both", alpha=0.3)
        left.set_ylabel("time (us)")
        right.set_ylabel("bus bandwidth (GB/s)")
        left.legend(fontsize=8)
        gmae = 100 * float(curves["gmae"][row])
        mape = 100 * float(curves["mape"][row])
        derived = " (time derived from busbw)" if attributes.get("time_derived_from_busbw") == "true" else ""
        fig.suptitle(f"{name}: {int(bench['n_ranks'][0])} GPUs, {int(bench['n_nodes'][0])} node(s)"
                     f"{derived} — GMAE {gmae:.2f}%, MAPE {mape:.2f}%", fontsize=10)
        fig.tight_layout()
        out = os.path.join(args.output_dir, f"{name}.{args.format}")
        fig.savefig(out, dpi=110)
        plt.close(fig)
        print(out)
        written += 1
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
