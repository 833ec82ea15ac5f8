#!/usr/bin/env bash
# Installs the Debian 12 packages only `make bench` needs (on top of scripts/install-deps.sh):
# gnuplot-nox draws docs/benchmarks.png, valgrind counts instructions per call (callgrind),
# python3 runs bench/run.py. Idempotent; needs root (or sudo) only when something is missing.
set -euo pipefail
packages=(gnuplot-nox valgrind python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-bench-deps: installing ${missing[*]}" >&2
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
