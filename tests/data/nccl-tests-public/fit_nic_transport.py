#!/usr/bin/env python3
"""Fit a topology's nics/transport (hop_latency_us, bandwidth_efficiency) to the FIT rows of a
split sweep (split_sweep.py) by grid search on perfsim's own prediction, GMAE over those rows.
usage: fit_nic_transport.py PERFSIM TOPOLOGY BENCH_H5 FIT_TABLE ASSETS_H5
prints the best pair; the topology file is not changed (a temporary copy is scored)."""
import json
import re
import subprocess
import sys
import tempfile

perfsim, topology_path, bench, table, assets = sys.argv[1:6]
topology = json.load(open(topology_path))


def gmae(hop_us, efficiency):
    topology["node"]["nics"]["transport"].update(
        {"hop_latency_us": hop_us, "bandwidth_efficiency": efficiency})
    with tempfile.NamedTemporaryFile("w", suffix=".json") as scratch:
        json.dump(topology, scratch)
        scratch.flush()
        out = subprocess.run([perfsim, "validate", "collectives", "--bench", bench, "--assets",
                              assets, "--topology", scratch.name, "--tables", table],
                             capture_output=True, text=True, check=True).stdout
    row = next(line for line in out.splitlines() if line.startswith(table))
    return float(re.findall(r"([0-9.]+)%", row)[0])


best = None
for hop_us in [14, 28, 56, 84, 112, 140, 160, 180, 200, 225, 250, 275, 300, 350, 400, 500, 600]:
    for efficiency in [0.5, 0.6, 0.7, 0.8, 0.85, 0.875, 0.9, 0.925, 0.95, 0.975, 1.0]:
        score = gmae(hop_us, efficiency)
        if best is None or score < best[0]:
            best = (score, hop_us, efficiency)
print(f"fit GMAE {best[0]}% at hop_latency_us {best[1]}, bandwidth_efficiency {best[2]}")
