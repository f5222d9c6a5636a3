#!/usr/bin/env python3
"""Fit a topology's nics/transport (hop_latency_us, bandwidth_efficiency, peer_latency_us,
tree_bandwidth_efficiency) to training tables
(e.g. the FIT rows of a split sweep, split_sweep.py, or the 2-node sweeps of a fabric) by grid
search on perfsim's own prediction: the mean over the tables of their GMAE.
usage: fit_nic_transport.py PERFSIM TOPOLOGY BENCH_H5 ASSETS_H5 TABLE[@NODES] [TABLE[@NODES]...]
HOPS="14 28 ...", EFFICIENCIES="0.5 ...", PEERS="0 1 ..." and TREES="0.8 ..." override the grids
(PEERS: 0 only; TREES: 1 only).
prints the best pair; the topology file is not changed (a temporary copy is scored)."""
import json
import os
import re
import subprocess
import sys
import tempfile

perfsim, topology_path, bench, assets = sys.argv[1:5]
tables = sys.argv[5:]
topology = json.load(open(topology_path))


def gmae(hop_us, efficiency, peer_us, tree):
    topology["node"]["nics"]["transport"].update(
        {"hop_latency_us": hop_us, "bandwidth_efficiency": efficiency, "peer_latency_us": peer_us,
         "tree_bandwidth_efficiency": tree})
    scores = []
    with tempfile.NamedTemporaryFile("w", suffix=".json") as scratch:
        json.dump(topology, scratch)
        scratch.flush()
        for entry in tables:
            table, _, nodes = entry.partition("@")
            out = subprocess.run([perfsim, "validate", "collectives", "--bench", bench, "--assets",
                                  assets, "--topology", scratch.name, "--tables", table] +
                                 (["--nodes", nodes] if nodes else []),
                                 capture_output=True, text=True, check=True).stdout
            row = next(line for line in out.splitlines() if line.split(" ")[0] == table)
            scores.append(float(re.findall(r"([0-9.]+)%", row)[0]))
    return sum(scores) / len(scores)


best = None
for hop_us in [float(h) for h in os.environ.get("HOPS", "14 28 56 84 112 140 160 180 200 225 250 275 300 350 400 500 600").split()]:
    for efficiency in [float(e) for e in os.environ.get("EFFICIENCIES", "0.5 0.6 0.7 0.8 0.85 0.875 0.9 0.925 0.95 0.975 1.0").split()]:
        for peer_us in [float(p) for p in os.environ.get("PEERS", "0").split()]:
            for tree in [float(t) for t in os.environ.get("TREES", "1").split()]:
                score = gmae(hop_us, efficiency, peer_us, tree)
                if best is None or score < best[0]:
                    best = (score, hop_us, efficiency, peer_us, tree)
print(f"fit mean GMAE {best[0]:.2f}% at hop_latency_us {best[1]}, bandwidth_efficiency {best[2]}, "
      f"peer_latency_us {best[3]}, tree_bandwidth_efficiency {best[4]}")
