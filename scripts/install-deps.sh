#!/usr/bin/env bash
# Installs the Debian 12 packages the build and tests need, plus any named as arguments
# (scripts/install-bench-deps.sh adds the benchmark's). Idempotent: does nothing when all are
# present. Needs root (or sudo) only when something is missing.
set -euo pipefail
packages=(build-essential cmake pkg-config make git
  libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libgtest-dev libgmock-dev libcli11-dev
  libvalijson-dev libre2-dev libsqlite3-dev libpq-dev postgresql haproxy libssl-dev libsimdjson-dev prometheus-cpp-dev prometheus libcjose-dev nodejs npm
  dpkg-dev help2man debootstrap "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm may come from outside Debian's packages (a preinstalled toolchain); accept them.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=(); for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]}")
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
