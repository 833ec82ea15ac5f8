#!/usr/bin/env bash
# The container image (issue 48): OUT_DIR/agency-mcp-VERSION-oci.tar, an OCI archive that
# `podman load` / `docker load` read, built without a registry or a daemon (umoci writes the
# layout): glibc's libraries from this machine's libc6, the release archive's binary and
# libraries (scripts/make-dist.sh) in the loader's default path, CA certificates for an https
# gateway, and a user of its own. Entry point the binary, default command `serve` (stdio on the
# sample gateway, or the gateway in AGENCY_GATEWAY_URL); runs as uid 10001, HOME /home/agency
# (the state database under it). Labelled io.modelcontextprotocol.server.name for the registry.
# Usage: make-image.sh BUILD_DIR [OUT_DIR] (default OUT_DIR: dist). Needs umoci and help2man.
set -euo pipefail
build=$(cd "$1" && pwd)
out=${2:-dist}
src=$(cd "$(dirname "$0")/.." && pwd)
command -v umoci >/dev/null || { echo "make-image.sh: umoci is missing: apt-get install umoci" >&2; exit 1; }
version=$("$build/agency-mcp" --version | awk '{print $NF}')
server_name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$src/server.json")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$src/scripts/make-dist.sh" "$build" "$work" >/dev/null
tar -C "$work" -xzf "$work/agency-mcp-$version-linux-x86_64.tar.gz"
dist=$work/agency-mcp-$version-linux-x86_64
rootfs=$work/rootfs
libdir=$rootfs/usr/lib/x86_64-linux-gnu
mkdir -p "$libdir" "$rootfs/usr/bin" "$rootfs/lib64" "$rootfs/etc/ssl/certs" "$rootfs/tmp" \
  "$rootfs/home/agency" "$rootfs/usr/share/doc/agency-mcp"
# glibc's own: the loader and the shared libraries of libc6 (not its gconv modules).
while read -r file; do
  case $file in
    */gconv/*) continue ;;
    */ld-linux-x86-64.so.2 | */lib*.so.[0-9]*) cp -L "$file" "$libdir/" ;;
  esac
done < <(dpkg -L libc6 | grep -E '/lib(64|/x86_64-linux-gnu)/[^/]+$')
ln -s ../usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$rootfs/lib64/ld-linux-x86-64.so.2"
cp "$dist"/lib/*.so* "$libdir/"
cp "$dist/lib/agency-mcp" "$rootfs/usr/bin/agency-mcp"
cp -r "$dist/share/doc/agency-mcp/." "$rootfs/usr/share/doc/agency-mcp/"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nagency:x:10001:10001:agency-mcp:/home/agency:/usr/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nagency:x:10001:\n' >"$rootfs/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
chmod 1777 "$rootfs/tmp"
chown 10001:10001 "$rootfs/home/agency"

umoci init --layout "$work/oci"
umoci new --image "$work/oci:agency-mcp:$version"
umoci unpack --image "$work/oci:agency-mcp:$version" "$work/bundle" >/dev/null
cp -a "$rootfs/." "$work/bundle/rootfs/"
umoci repack --image "$work/oci:agency-mcp:$version" "$work/bundle"
umoci config --image "$work/oci:agency-mcp:$version" \
  --os linux --architecture amd64 \
  --config.entrypoint /usr/bin/agency-mcp --config.cmd serve \
  --config.user 10001:10001 --config.workingdir /home/agency \
  --config.env HOME=/home/agency --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --config.label "io.modelcontextprotocol.server.name=$server_name" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.title=agency-mcp"
umoci gc --layout "$work/oci"
# docker load (containerd's image store) names an image by this annotation; podman by the tag.
python3 - "$work/oci/index.json" "$version" <<'PY'
import json, sys
path, version = sys.argv[1:]
index = json.load(open(path))
for manifest in index["manifests"]:
    manifest.setdefault("annotations", {})["io.containerd.image.name"] = \
        f"docker.io/library/agency-mcp:{version}"
json.dump(index, open(path, "w"))
PY
mkdir -p "$out"
image=$out/agency-mcp-$version-oci.tar
tar -C "$work/oci" --owner=0 --group=0 --numeric-owner -cf "$image" .
(cd "$out" && sha256sum "$(basename "$image")" >"$(basename "$image").sha256")
echo "$image ($(du -h "$image" | cut -f1))"
