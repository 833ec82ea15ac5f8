#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests (Debian's server binaries, /usr/lib/postgresql/15/bin
# or $PG_BIN). `start DIR` creates DIR, starts a cluster in it on a free loopback port (trust
# auth, socket in DIR, fsync off) and prints its URL (also written to DIR/url); `stop DIR`
# stops it at once and removes DIR. PostgreSQL refuses to run as root: as root the cluster runs
# as the `postgres` user (Debian's postgresql package makes it) through runuser.
# PG_EXTRA_OPTS: more server options for `start`, e.g.
# "-c shared_preload_libraries=pg_stat_statements" (bench/store.py counts statements with it).
set -euo pipefail
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 start|stop DIR" >&2
    exit 2
fi
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
if [ ! -x "$bin/initdb" ] || [ ! -x "$bin/pg_ctl" ]; then
    echo "pg-cluster: no PostgreSQL server in $bin: install it (scripts/install-test-deps.sh" \
         "installs Debian's postgresql package)" >&2
    exit 3
fi
as=()
if [ "$(id -u)" -eq 0 ]; then as=(runuser -u postgres --); fi

case $cmd in
start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ ${#as[@]} -gt 0 ]; then chown postgres: "$dir"; fi
    cd "$dir"
    if ! "${as[@]}" "$bin/initdb" -D "$dir/data" -U agency --auth=trust -E UTF8 --no-sync \
        >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        exit 1
    fi
    # A random port; another process may hold it, so a failed start tries another.
    for _ in 1 2 3 4 5 6 7 8; do
        port=$((20000 + RANDOM % 40000))
        if "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 -o \
            "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 ${PG_EXTRA_OPTS:-}" \
            start >/dev/null 2>&1; then
            url="postgres://agency@127.0.0.1:$port/postgres"
            echo "$url" >"$dir/url"
            echo "$url"
            exit 0
        fi
    done
    echo "pg-cluster: the server did not start; its log:" >&2
    cat "$dir/server.log" >&2 || true
    exit 1
    ;;
stop)
    if [ -d "$dir/data" ]; then
        (cd / && "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop) >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
