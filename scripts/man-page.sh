#!/bin/sh
# The manual page agency-mcp(1), made with help2man from the binary's own --help: the
# subcommands' help as COMMANDS, then the files and variables the Debian package uses.
# Usage: man-page.sh AGENCY_MCP_BINARY OUTPUT.1.gz
set -eu
# Run by its bare name, so that the usage lines say "agency-mcp", not the build path.
PATH="$(cd "$(dirname "$1")" && pwd):$PATH"
export PATH
bin=$(basename "$1")
out=$2
command -v help2man >/dev/null || {
    echo "man-page.sh: help2man is missing: apt-get install help2man (scripts/install-test-deps.sh; make package installs it)" >&2
    exit 1
}
include=$(mktemp)
trap 'rm -f "$include" "$out.tmp"' EXIT
# A help text as roff: backslashes escaped, no line taken for a request.
as_roff() { sed -e 's/\\/\\e/g' -e 's/^\([.'"'"']\)/\\\&\1/'; }
{
    echo "[COMMANDS]"
    for command in "serve" "sample-gateway" "tools-doc" "keys add" "keys list" "keys remove" \
                   "keys rotate" "state migrate" "state export" "state import"; do
        echo ".SS \"agency-mcp $command\""
        echo ".nf"
        # shellcheck disable=SC2086  # the subcommand's words
        help=--help
        [ "$command" = serve ] && help=--help-all  # every group of serve's options
        AGENCY_GATEWAY_URL= "$bin" $command $help 2>&1 | as_roff
        echo ".fi"
    done
    cat <<'ROFF'
[FILES]
.TP
.I /etc/agency-mcp/agency-mcp.env
The service's settings (AGENCY_* variables, one per line), read by the systemd unit.
.TP
.I /var/lib/agency-mcp/state.db
The state database of the packaged service: audit jobs, task records, confirmations,
idempotency records.
.TP
.I /lib/systemd/system/agency-mcp.service
The unit: Streamable HTTP on 127.0.0.1:8787 as the system user agency-mcp.
[HEALTH AND STOPPING]
Over HTTP, GET /healthz answers 200 while the process runs, and GET /readyz answers 200 when
the state store and the gateway's discovery answer, 503 while starting, while the gateway is
unreachable and while draining. SIGTERM (or SIGINT) drains: new calls get 503, the calls in
flight finish within --drain-timeout, then the process exits 0. Over stdio, end of input and
SIGTERM both answer the calls in flight and exit 0.
[SEE ALSO]
/usr/share/doc/agency-mcp/operations.md, /usr/share/doc/agency-mcp/deploy.md
ROFF
} > "$include"
help2man --no-info --no-discard-stderr --section=1 \
    --name="MCP tool server over an SEO agency's gateway" \
    --include="$include" "$bin" > "$out.tmp"
gzip -9n < "$out.tmp" > "$out"
