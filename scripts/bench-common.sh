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
source .ghbench/env
bin=${CARGO_TARGET_DIR:-$repo/target}/release/ghbench
[ -x "$bin" ] || cargo build --release
