#!/usr/bin/env bash
# Runs `just` with the given arguments, installing it first when missing (from
# PyPI's `rust-just` into ~/.cache/ghbench/tools, outside the checkout), so a
# fresh machine with Rust and Python needs nothing else:
#   bash scripts/just.sh demo     bash scripts/just.sh test
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$HOME/.cache/ghbench/tools
if ! command -v just >/dev/null; then
    if [ ! -x "$tools/bin/just" ]; then
        echo "[just.sh] installing just (PyPI rust-just) into $tools" >&2
        # Debian's own python3 has venv's pip in a package of its own.
        python3 -c 'import ensurepip' 2>/dev/null || {
            if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; fi
        }
        python3 -m venv "$tools"
        "$tools/bin/pip" install -q --disable-pip-version-check rust-just
    fi
    export PATH="$tools/bin:$PATH"
fi
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
exec just "$@"
