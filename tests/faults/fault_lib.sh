# Shared by the fault tests (sourced). Every script gets PERFSIM MPIEXEC SOURCE_DIR and works in
# its own temporary directory, removed on exit (mounts it made are unmounted first).
set -u
perfsim="$1"
mpiexec="$2"
source_dir="$3"
work="$(mktemp -d /tmp/perfsim-faults-XXXXXX)"
mounts=()
cleanup() {
  for mount_point in "${mounts[@]+"${mounts[@]}"}"; do umount "$mount_point" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

now_s() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }'; }
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# Synthetic runs long enough to be interrupted while they simulate: under mpirun one rank per
# process, so every step is a cross-process reduction (5-15 s on two cores; 60,000 repetitions
# once finished inside the 0.5 s the SIGTERM test waits before signalling).
long_mpi_run=(simulate --ranks 4 --repetitions 200000 --ranks-per-process 1)
long_lone_run=(simulate --ranks 4 --repetitions 100000)

# children_of PID: the pids whose parent is PID (from /proc: procps may not be installed).
children_of() {
  local stat
  for stat in /proc/[0-9]*/stat; do
    awk -v parent="$1" '{ sub(/^.*\) /, ""); if ($2 == parent) print FILENAME }' "$stat" 2>/dev/null
  done | sed 's|/proc/\([0-9]*\)/stat|\1|'
}

# process_state PID: its state letter (Z for a zombie), empty when gone.
process_state() {
  sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1
}

# wait_for_line FILE TEXT: until FILE holds TEXT (60 s at most).
wait_for_line() {
  for _ in $(seq 1 600); do
    grep -q "$2" "$1" && return 0
    sleep 0.1
  done
  cat "$1"
  fail "no '$2' in $1 after 60 s"
}

# try_mount_tmpfs DIR OPTIONS: a small tmpfs at DIR, where this user may mount (root in a
# container usually may); returns non-zero where not.
try_mount_tmpfs() {
  mkdir -p "$1"
  if mount -t tmpfs -o "$2" tmpfs "$1" 2>/dev/null; then
    mounts+=("$1")
    return 0
  fi
  return 1
}

# no_partial_files DIR NAME: neither NAME nor a temporary of it (.NAME.tmp.*) in DIR.
no_partial_files() {
  local leftovers
  leftovers="$(find "$1" -maxdepth 1 \( -name "$2" -o -name ".$2.tmp.*" \) 2>/dev/null)"
  [ -z "$leftovers" ] || fail "partial output left behind: $leftovers"
}
