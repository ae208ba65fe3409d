# Sourced by the `just bench-*` scripts that take HOURS EVENTS_PER_HOUR REPEAT:
# strict mode, the repository as working folder, the arguments with their
# defaults (40 x 25,000 events = 1M, 5 runs), a work folder (GHBENCH_BENCH_WORK
# to keep it, else a temporary one removed at exit), the servers' settings and
# the release binary ($bin).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
hours=${1:-40}
events=${2:-25000}
repeat=${3:-5}
work=${GHBENCH_BENCH_WORK:-$(mktemp -d)}
[ -n "${GHBENCH_BENCH_WORK:-}" ] || trap 'rm -rf "$work"' EXIT
# The servers' URLs, once `just setup` ran (polars alone needs none).
if [ -f .ghbench/env ]; then source .ghbench/env; fi
# GHBENCH_BIN: another build of ghbench to run (a debug one, say), named in the record by its commit.
bin=${GHBENCH_BIN:-${CARGO_TARGET_DIR:-$repo/target}/release/ghbench}
[ -x "$bin" ] || cargo build --release

# `ghbench ARGS...` with its output in LOG, shown only when it fails, and its
# exit status said in words (the same for every command: see `ghbench --help`).
# Usage: ghbench_step LOG WHAT ARGS...
ghbench_step() {
    local log=$1 what=$2 status=0
    shift 2
    "$bin" "$@" >"$log" 2>&1 || status=$?
    [ "$status" = 0 ] && return 0
    cat "$log"
    case $status in
        1) echo "$what finished, but its results cannot be trusted as they stand (engines disagree, or a step failed: see above)" >&2 ;;
        2) echo "$what stopped on an error (see above)" >&2 ;;
        130|143) echo "$what was interrupted" >&2 ;;
        *) echo "$what ended with exit status $status" >&2 ;;
    esac
    exit "$status"
}
