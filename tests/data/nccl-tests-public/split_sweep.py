#!/usr/bin/env python3
"""Split an nccl-tests log into the rows a fabric parameter is fitted on and the rows it is
judged on: fit = sizes <= 4 KiB (latency-bound) and >= 1 GiB (bandwidth-bound), held = the rest.
Header lines are kept in both; rows are copied unchanged.
usage: split_sweep.py LOG OUTDIR  ->  OUTDIR/<stem>-fit.txt, OUTDIR/<stem>-held.txt"""
import os
import sys

log, outdir = sys.argv[1], sys.argv[2]
stem = os.path.splitext(os.path.basename(log))[0]
fit, held = [], []
for line in open(log):
    fields = line.split()
    if line.startswith("#") or not fields or not fields[0].isdigit():
        fit.append(line)
        held.append(line)
    elif int(fields[0]) <= 4096 or int(fields[0]) >= 1 << 30:
        fit.append(line)
    else:
        held.append(line)
for suffix, lines in (("fit", fit), ("held", held)):
    with open(os.path.join(outdir, f"{stem}-{suffix}.txt"), "w") as out:
        out.writelines(lines)
