#!/usr/bin/env python3
"""Every option of every perfsim subcommand that takes a value names its default in --help.

CLI11 prints a captured default as "TYPE=value"; an option whose default is "nothing" must say
what happens without it ("default: ...") or that it is required. Prints the offenders and exits
1 when there are any.

    tools/check_help_defaults.py build/mpi_sim/perfsim
"""
import re
import subprocess
import sys

VALUE_TYPE = re.compile(r"^(TEXT|INT|UINT|FLOAT|BOOLEAN|ENUM)\b")


def help_text(perfsim, path):
    done = subprocess.run([perfsim, *path, "--help"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"`perfsim {' '.join(path)} --help` exited {done.returncode}")
    return done.stdout


def subcommands(text):
    if "Subcommands:" not in text:
        return []
    lines = text.split("Subcommands:", 1)[1].splitlines()
    return [l.split()[0] for l in lines if re.match(r"^  \S", l)]


def options(text):
    """(first line, whole text) of each option entry before the subcommand list."""
    entries = []
    for line in text.split("Subcommands:", 1)[0].splitlines():
        if re.match(r"^  -", line):
            entries.append([line])
        elif entries and re.match(r"^ {4,}\S", line):
            entries[-1].append(line)
    return [(e[0].strip(), " ".join(x.strip() for x in e)) for e in entries]


def offenders(perfsim, path=()):
    text = help_text(perfsim, list(path))
    found = []
    for head, whole in options(text):
        parts = head.split()
        if len(parts) < 2 or not VALUE_TYPE.match(parts[1]):
            continue  # a flag
        # A captured default follows the type directly: "INT=8", "INT:INT in [0 - 3]=0".
        if re.search(r"[A-Z\]}]=\S", head) or re.search(r"default|required", whole, re.I):
            continue
        found.append(f"perfsim {' '.join(path)}: {whole[:120]}")
    for sub in subcommands(text):
        found += offenders(perfsim, (*path, sub))
    return found


def main():
    found = offenders(sys.argv[1])
    for line in found:
        print(line)
    print(f"{len(found)} option(s) without a default in --help")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
