#!/usr/bin/env bash
# PostgreSQL over TLS with sslmode=verify-full, as the instances' unit runs it (ctest
# deploy.pg_verify_full; issue 49 item 6): a throwaway CA signs the database server's
# certificate for "localhost", the server asks TCP clients for a SCRAM password over TLS only,
# and agency-mcp runs as under systemd: no home folder, the password file a credential copy
# (PGPASSFILE=%d/pgpass, the drop-in docs/deploy.md shows). Then:
#   verify-full with sslrootcert and the password file: state migrate answers;
#   without sslrootcert: refused, saying to name the CA (not "check the host");
#   with another CA: refused; without the password file: refused, saying where it goes;
#   the password never shows in any output.
# Usage: pg_verify_full.sh AGENCY_BINARY SOURCE_DIR. Exits 77 (skipped) without PostgreSQL.
set -euo pipefail
bin=$1
src=$(cd "$2" && pwd)
[ -x /usr/lib/postgresql/15/bin/initdb ] && command -v psql >/dev/null && command -v openssl >/dev/null ||
  { echo "SKIPPED: needs PostgreSQL 15, psql and openssl (scripts/install-test-deps.sh)"; exit 77; }
work=$(mktemp -d)
cleanup() { "$src/scripts/pg-cluster.sh" stop "$work/pg" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# The drop-in the docs give is the one run here.
for line in 'LoadCredential=pgpass:/etc/agency-mcp/pgpass' 'Environment=PGPASSFILE=%d/pgpass'; do
  grep -qxF "   $line" "$src/docs/deploy.md" || bad "docs/deploy.md no longer shows the drop-in line $line"
done

echo "== a throwaway CA, and a server certificate for localhost"
tls=$work/tls
mkdir -p "$tls"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key "$tls/ca.key"
openssl req -x509 -new -key "$tls/ca.key" -subj "/CN=agency-mcp test CA" -days 2 -out "$tls/ca.crt"
key "$tls/other-ca.key"
openssl req -x509 -new -key "$tls/other-ca.key" -subj "/CN=another CA" -days 2 -out "$tls/other-ca.crt"
key "$tls/server.key"
openssl req -new -key "$tls/server.key" -subj "/CN=localhost" -out "$tls/server.csr"
printf 'subjectAltName=DNS:localhost\n' >"$tls/ext"
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
  -days 2 -extfile "$tls/ext" -out "$tls/server.crt" 2>/dev/null
chmod 0600 "$tls/server.key"
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$tls" && chmod 0755 "$work"

echo "== the database server: TLS on, SCRAM passwords for TCP"
url=$(PG_EXTRA_OPTS="-c ssl=on -c ssl_cert_file=$tls/server.crt -c ssl_key_file=$tls/server.key" \
      "$src/scripts/pg-cluster.sh" start "$work/pg")
port=${url##*:}; port=${port%%/*}
password=pw-$(openssl rand -hex 8)
psql -Xq "$url" -c "ALTER ROLE agency PASSWORD '$password'"
printf 'local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\nhostssl all all ::1/128 scram-sha-256\n' \
  >"$work/pg/data/pg_hba.conf"
psql -Xq "$url" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5

# As the unit: a clean environment, no home, the credentials folder with the password file.
creds=$work/credentials
mkdir -p "$creds"
printf 'localhost:%s:postgres:agency:%s\n' "$port" "$password" >"$creds/pgpass"
chmod 0400 "$creds/pgpass"
migrate() {  # URL [PGPASSFILE] -> stdout+stderr of state migrate; status as its own
  env -i PATH=/usr/bin:/bin HOME=/nonexistent CREDENTIALS_DIRECTORY="$creds" ${2:+PGPASSFILE=$2} \
    "$bin" state migrate --state-url "$1" 2>&1
}
base="postgresql://agency@localhost:$port/postgres?sslmode=verify-full"
all=""

out=$(migrate "$base&sslrootcert=$tls/ca.crt" "$creds/pgpass") || bad "verify-full with the CA and the password file: $out"
all+=$out
echo "  verify-full, sslrootcert, PGPASSFILE: $(tail -1 <<<"$out")"
grep -q 'schema version' <<<"$out" || bad "no schema version: $out"

out=$(migrate "$base" "$creds/pgpass") && bad "verify-full with no CA named was accepted"
all+=$out
echo "  no sslrootcert: $(grep -o 'root certificate file[^(]*' <<<"$out" | head -1)"
grep -q 'sslrootcert=/etc/agency-mcp/db-ca.crt' <<<"$out" || bad "no CA named, and the message does not say to name one: $out"

out=$(migrate "$base&sslrootcert=$tls/other-ca.crt" "$creds/pgpass") && bad "a certificate of another CA was accepted"
all+=$out
grep -qi 'certificate verify failed' <<<"$out" || bad "another CA: $out"

out=$(migrate "$base&sslrootcert=$tls/ca.crt") && bad "no password, yet connected"
all+=$out
grep -q 'PGPASSFILE' <<<"$out" || bad "no password: the message does not say where it goes: $out"

out=$(migrate "postgresql://agency@localhost:$port/postgres?sslmode=disable" "$creds/pgpass") &&
  bad "a connection without TLS was accepted (pg_hba asks for hostssl)"
all+=$out

grep -qF "$password" <<<"$all" && bad "the password showed in a message"
[ "$fail" -eq 0 ] && echo PASS || echo FAIL
exit "$fail"
