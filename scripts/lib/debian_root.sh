# A fresh Debian root (debootstrap --variant=minbase; Debian 12 "bookworm" unless told) for the
# checks that must not see this machine's packages: the clean-root check
# (scripts/check-clean-root.sh), the package test (tests/package/test_package.sh) and the
# release archive's (tests/package/test_dist.sh, in Debian 12 and 13). Sourced; needs root.
#
#   debian_root_make DIR [RELEASE]
#                          unpacks the cached minimal root of RELEASE (bookworm, trixie) into
#                          DIR (the first time: debootstrap, then kept as a tarball), sets its apt
#                          sources, mounts /proc, keeps downloaded .debs in the cache (those of
#                          bookworm only: one archive cache), and starts no service
#   debian_root_remove DIR unmounts everything under it and removes it (never across a mount)
#   in_root DIR CMD...     runs CMD inside, with a clean environment
#
# The cache is $AGENCY_CACHE_DIR (default /var/cache/agency-mcp), outside any clone, so a later
# run on the same machine (CI in a fresh clone, too) finds it: the minimal root
# (RELEASE-minbase.tar.gz, ~40 s of debootstrap when missing) and the .debs apt fetched
# (apt-archives/). AGENCY_DEBIAN_MIRROR and AGENCY_DEBIAN_SECURITY_MIRROR override the mirrors.

debian_root_cache=${AGENCY_CACHE_DIR:-/var/cache/agency-mcp}
debian_root_mirror=${AGENCY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
debian_root_security=${AGENCY_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

debian_root_make() {
  local root=$1 release=${2:-bookworm}
  local tarball=$debian_root_cache/$release-minbase.tar.gz
  command -v debootstrap >/dev/null || { echo "missing debootstrap: run scripts/install-test-deps.sh"; return 1; }
  mkdir -p "$debian_root_cache/apt-archives/partial" "$root"
  if [ ! -s "$tarball" ]; then
    local start=$SECONDS
    debootstrap --variant=minbase "$release" "$root" "$debian_root_mirror" \
      >"$debian_root_cache/debootstrap.log" 2>&1 ||
      { tail -30 "$debian_root_cache/debootstrap.log"; return 1; }
    tar -C "$root" -czf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    echo "debootstrap took $((SECONDS - start)) s (kept in $tarball)"
  else
    tar -C "$root" -xzf "$tarball"
  fi
  cat >"$root/etc/apt/sources.list" <<SOURCES
deb $debian_root_mirror $release main
deb $debian_root_mirror $release-updates main
deb $debian_root_security $release-security main
SOURCES
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  # The network may reach the registries through a proxy that signs with a CA of its own: the
  # root trusts for Node.js and npm what this machine trusts (NODE_EXTRA_CA_CERTS), as it uses
  # its resolv.conf. Nothing else of this machine's goes in.
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r "$NODE_EXTRA_CA_CERTS" ]; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp "$NODE_EXTRA_CA_CERTS" "$root/usr/local/share/ca-certificates/agency-network-ca.crt"
  fi
  # Packages install, services do not start (postgresql's would, inside the root).
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  # Keep what apt downloads for the next root.
  echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/99keep"
  mount -t proc proc "$root/proc" 2>/dev/null || echo "(no /proc in the root: mount refused)"
  [ "$release" = bookworm ] || return 0
  mount --bind "$debian_root_cache/apt-archives" "$root/var/cache/apt/archives" ||
    echo "(apt's downloads are not kept: bind mount refused)"
}

debian_root_remove() {
  local root=$1 mnt left
  [ -d "$root" ] || return 0
  root=$(realpath "$root")
  # Every mount under the root, deepest first: bind mounts of this machine's caches are on the
  # same file system, so `rm --one-file-system` alone would go through them.
  for mnt in $(awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r); do
    umount -l "$mnt" 2>/dev/null || true
  done
  left=$(awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts)
  if [ -n "$left" ]; then
    echo "debian_root_remove: $root still has mounts ($left): not removed" >&2
    return 1
  fi
  rm -rf --one-file-system "$root"
}

in_root() {
  local root=$1 ca=/usr/local/share/ca-certificates/agency-network-ca.crt extra=()
  shift
  [ -r "$root$ca" ] && extra=(NODE_EXTRA_CA_CERTS=$ca)
  chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root "${extra[@]}" "$@"
}
