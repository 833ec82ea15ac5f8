#!/usr/bin/env bash
# Installs the Debian 12 packages that building and running agency-mcp needs (`make run`; Node.js
# and npm bundle the MCP Apps views of views/ at build time, scripts/build-views.sh), plus
# any named as arguments (scripts/install-test-deps.sh adds what the tests need,
# scripts/install-bench-deps.sh the benchmark's). Idempotent: does nothing when all are present.
# Needs root (or sudo) only when something is missing. CI proves this list on a fresh Debian 12
# root (scripts/check-clean-root.sh): a package missing here fails it, naming what is missing.
set -euo pipefail
packages=(build-essential cmake pkg-config ccache
  libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev libvalijson-dev
  libre2-dev libsqlite3-dev libpq-dev libssl-dev libsimdjson-dev prometheus-cpp-dev
  libcjose-dev libjansson-dev
  nodejs npm
  "$@")
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
