#!/usr/bin/env bash
# The release archive (issue 48): agency-mcp-VERSION-linux-x86_64.tar.gz in OUT_DIR, which runs
# on an x86_64 Linux with glibc 2.36 or later and nothing else installed (Debian 12 and 13
# tested: tests/package/test_dist.sh):
#   bin/agency-mcp          the command (a launcher: the system's loader runs lib/agency-mcp
#                           with the libraries beside it, nothing inherited by child processes)
#   lib/                    the binary and every shared library it needs but the C library's own
#   share/man/man1/         the manual page
#   share/doc/agency-mcp/   README, docs, the project's copyright file and each shipped
#                           library's (third-party/PACKAGE.copyright)
# Usage: make-dist.sh BUILD_DIR [OUT_DIR] (default OUT_DIR: dist). Needs help2man for the page.
set -euo pipefail
build=$(cd "$1" && pwd)
out=${2:-dist}
src=$(cd "$(dirname "$0")/.." && pwd)
binary=$build/agency-mcp
[ -x "$binary" ] || { echo "make-dist.sh: no $binary: build it first (make build)" >&2; exit 1; }
version=$("$binary" --version | awk '{print $NF}')
name=agency-mcp-$version-linux-x86_64
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/$name
mkdir -p "$stage/bin" "$stage/lib" "$stage/share/man/man1" "$stage/share/doc/agency-mcp/third-party"

cp "$binary" "$stage/lib/agency-mcp"
strip --strip-debug "$stage/lib/agency-mcp"
# The libraries the binary loads, all but glibc's own: those belong to the system it runs on
# (the loader must match its libc), and every glibc since 2.36 runs what was linked on 2.36.
libs=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
for lib in $libs; do
  case $(basename "$lib") in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | \
      libutil.so.* | ld-linux*) continue ;;
  esac
  cp -L "$lib" "$stage/lib/"
  package=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1) ||
    package=$(dpkg -S "$lib" | head -1 | cut -d: -f1)
  [ -n "$package" ] && [ -r "/usr/share/doc/$package/copyright" ] &&
    cp "/usr/share/doc/$package/copyright" "$stage/share/doc/agency-mcp/third-party/$package.copyright"
done

cat >"$stage/bin/agency-mcp" <<'LAUNCHER'
#!/bin/sh
# agency-mcp from the release archive: the system's loader runs the binary with the libraries
# shipped beside it (no LD_LIBRARY_PATH, so nothing it starts inherits them).
here=$(dirname "$(readlink -f "$0")")
exec /lib64/ld-linux-x86-64.so.2 --library-path "$here/../lib" --argv0 agency-mcp \
  "$here/../lib/agency-mcp" "$@"
LAUNCHER
chmod 755 "$stage/bin/agency-mcp"

sh "$src/scripts/man-page.sh" "$binary" "$stage/share/man/man1/agency-mcp.1.gz"
cp "$src/README.md" "$stage/share/doc/agency-mcp/"
cp "$src"/docs/*.md "$stage/share/doc/agency-mcp/"
cp "$src/deploy/debian/copyright" "$stage/share/doc/agency-mcp/copyright"

mkdir -p "$out"
tar -C "$work" --owner=0 --group=0 --numeric-owner -czf "$out/$name.tar.gz" "$name"
(cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "$out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1), $(ls "$stage/lib" | wc -l) files in lib/)"
