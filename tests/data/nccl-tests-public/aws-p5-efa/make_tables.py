#!/usr/bin/env python3
"""Write one busbw-only nccl-tests table (the layout collectives/nccl_tests_log.cpp reads, as in
shared/data/nccl-tests/azure-*-busbw.txt) per collective and node count from the repository's
CSVs. Every busbw value is the CSV's out-of-place busbw cell, copied as text; the size is the
CSV's size(MB) read as nccl-tests' -b 32M convention (MiB).
usage: make_tables.py  (run in this directory; writes tables/)"""
import csv
import os

SOURCE = ("https://github.com/crazyguitar/aws-gpu-communication-benchmark/blob/{commit}/data/{file}")
RUNS = {
    "nccl_all_reduce.csv": ("allreduce", "all_reduce_perf", "4fdb5a4fab8b2e173e2c7e87d9faddd9f54ddfea"),
    "nccl_alltoall.csv": ("alltoall", "alltoall_perf", "a77f70db668034b75db9a430b3cd718f59a6c232"),
}
os.makedirs("tables", exist_ok=True)
for file, (collective, binary, commit) in RUNS.items():
    by_nodes = {}
    for row in csv.DictReader(open(file)):
        by_nodes.setdefault(int(row["Nodes"]), []).append(row)
    for nodes, rows in sorted(by_nodes.items()):
        gpus = int(rows[0]["GPUs"])
        name = f"tables/aws-p5-efa-{nodes}node-{collective}-busbw.txt"
        with open(name, "w") as out:
            out.write(f"# source: {SOURCE.format(commit=commit, file=file)} (rows Nodes={nodes})\n")
            out.write(f"# hardware: AWS p5.48xlarge (ml.p5.48xlarge, SageMaker HyperPod): 8x H100 80GB per node, NVSwitch; 32 EFA interfaces per node (4 per GPU, 3200 Gb/s per node), per the repository's README ('four Elastic Fabric Adapter (EFA) interfaces per GPU') and its k8s manifests (vpc.amazonaws.com/efa: 32)\n")
            out.write(f"# gpus: {gpus}\n# nodes: {nodes}\n")
            how = ("alltoall_perf -b 32M -e 2048M -f 2 -n 1000 -w 10 --blocking 0, 8 ranks per node, FI_PROVIDER=efa, aws-ofi-nccl tuner plugin (k8s/nccl_alltoall_perf.yaml)"
                   if collective == "alltoall" else "all_reduce_perf, 8 ranks per node; parameters in the repository's k8s/nccl_all_reduce_perf.yaml")
            out.write(f"# collective: {collective} ({how})\n")
            out.write("# columns: size_label = the CSV's size(MB); size_bytes_inferred = size(MB) x 2^20; busbw_GBps = the CSV's 'out busbw(GB/s)' cell (out-of-place)\n")
            out.write("# size_label size_bytes_inferred busbw_GBps\n")
            for row in rows:
                mb = int(row["size(MB)"])
                out.write(f"{mb}M {mb << 20} {row['out busbw(GB/s)'].strip()}\n")
