#!/usr/bin/env bash
# The Debian 12 packages `make test` and CI need on top of what building and running needs
# (scripts/install-deps.sh, which does the work): GoogleTest; clang 14 with its sanitizer and
# libFuzzer runtimes (the unit tests run under ASan + UBSan, the fuzz targets); PostgreSQL
# (the shared-store tests), HAProxy (the scale-out test), promtool (the metrics format); Node.js
# and npm (the real MCP clients, conformance); dpkg-dev, file (CPack's shared-library
# dependencies), help2man and debootstrap (the Debian package, the release archive and the
# clean-root check); podman, runc and umoci (the container image); Universal Ctags (function
# sizes); git and python3; Chromium
# (the MCP Apps views rendered in a real browser, driven by puppeteer-core: no browser download).
# `--check` lists the commands and files the tests use and fails naming any that is missing.
set -euo pipefail
here=$(dirname "$0")
if [ "${1:-}" = --check ]; then
  missing=()
  for c in g++ cmake clang++-14 llvm-symbolizer-14 node npm haproxy promtool debootstrap help2man \
           podman runc umoci \
           dpkg-deb dpkg-shlibdeps file ctags git python3 chromium /usr/lib/postgresql/15/bin/initdb /usr/lib/postgresql/15/bin/pg_ctl \
           /usr/include/gtest/gtest.h /usr/include/gmock/gmock.h; do
    if [[ $c == /* ]]; then [ -e "$c" ] || missing+=("$c"); else command -v "$c" >/dev/null || missing+=("$c"); fi
  done
  ls /usr/lib/llvm-14/lib/libFuzzer.a >/dev/null 2>&1 ||
    ls /usr/lib/llvm-14/lib/clang/14*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
    missing+=("libFuzzer (libclang_rt.fuzzer-x86_64.a)")
  ls /usr/lib/llvm-14/lib/clang/14*/lib/linux/libclang_rt.asan-x86_64.a >/dev/null 2>&1 ||
    missing+=("ASan runtime (libclang_rt.asan-x86_64.a)")
  if [ ${#missing[@]} -gt 0 ]; then
    echo "install-test-deps: after installing, still missing: ${missing[*]}" >&2
    exit 1
  fi
  echo "install-test-deps: every command and file the tests use is there"
  exit 0
fi
exec "$here/install-deps.sh" libgtest-dev libgmock-dev \
  clang-14 libclang-rt-14-dev libfuzzer-14-dev llvm-14 \
  postgresql haproxy prometheus nodejs npm dpkg-dev file help2man debootstrap universal-ctags git python3 chromium \
  podman runc umoci \
  "$@"
