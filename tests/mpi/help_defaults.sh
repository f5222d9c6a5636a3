#!/usr/bin/env bash
# Issue 19: every option of every subcommand that takes a value names its default in --help
# (tools/check_help_defaults.py walks `perfsim --help` and every subcommand's).
set -u
perfsim="$1"
python3 "$(dirname "$0")/../../tools/check_help_defaults.py" "$perfsim"
