#!/usr/bin/env bash
# Installs what makes the build faster when it is missing: mold, the linker
# scripts/link-gcc uses (Debian's package; root or sudo). Never fatal: without
# it the build links with the system's default linker, only slower.
set -uo pipefail
command -v mold >/dev/null && exit 0
command -v apt-get >/dev/null || { echo "[build-tools] no apt-get: linking with the default linker (install mold for faster links)" >&2; exit 0; }
if [ "$(id -u)" = 0 ]; then as_root=(); elif command -v sudo >/dev/null; then as_root=(sudo); else
    echo "[build-tools] not root and no sudo: linking with the default linker (install mold for faster links)" >&2; exit 0
fi
echo "[build-tools] installing mold (Debian) for faster links" >&2
{ "${as_root[@]}" apt-get update -qq && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mold >/dev/null; } \
    || echo "[build-tools] could not install mold: linking with the default linker" >&2
exit 0
