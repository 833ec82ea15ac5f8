#!/usr/bin/env bash
# Runs the libFuzzer targets built in build-fuzz/ (cmake --preset fuzz). Used by the Makefile:
#   scripts/fuzz.sh run SECONDS [TARGET...]     fuzz each target for SECONDS (make fuzz)
#   scripts/fuzz.sh replay SECONDS [TARGET...]  replay each committed corpus, then fuzz each
#                                               target for SECONDS (make fuzz-replay, CI)
#   scripts/fuzz.sh known [TARGET...]           run each input of fuzz/crashes-known/ and say
#                                               which still crash (the classes fixed elsewhere)
# Fuzzing starts from the committed seeds (fuzz/corpus/<target>/) plus what earlier runs on
# this machine found (build-fuzz/fuzz-corpus/<target>/, not committed). A crash leaves its
# input in build-fuzz/fuzz-artifacts/<target>/ and makes the script fail; one line per target
# says how many inputs ran and the result.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
mode=${1:?usage: scripts/fuzz.sh run|replay SECONDS [TARGET...] | known [TARGET...]}
shift
seconds=0
if [ "$mode" != known ]; then seconds=${1:?seconds}; shift; fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(stdio_dispatch http_request tool_call sealed_tokens page_walk sample_query preview_text untrusted_text write_log traceparent oauth_token compact_text lean_answer keys_import)

# Input size limits: a stdio session or an HTTP exchange of several messages; a page of rows.
max_len() {
    case $1 in
        stdio_dispatch|http_request|oauth_token) echo 16384 ;;
        page_walk|preview_text|untrusted_text) echo 65536 ;;
        *) echo 4096 ;;
    esac
}

# ASan: stop at the first error with a readable stack; UBSan already aborts (-fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=0:symbolize=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
sym=$(command -v llvm-symbolizer-14 || ls /usr/lib/llvm-14/bin/llvm-symbolizer 2>/dev/null || true)
[ -n "$sym" ] && export ASAN_SYMBOLIZER_PATH=$sym

# One target: its summary line(s) into $BUILD/fuzz-logs/<target>.<mode>.summary; fails on a crash.
one_target() {
    local t=$1 summary=() failed=0
    bin=$BUILD/fuzz_$t
    [ -x "$bin" ] || { echo "fuzz: $bin is not built (make fuzz builds it)" >&2; exit 2; }
    seeds=fuzz/corpus/$t
    log=$BUILD/fuzz-logs/$t.$mode.log
    mkdir -p "$BUILD/fuzz-logs" "$BUILD/fuzz-artifacts/$t" "$BUILD/fuzz-corpus/$t"
    common=(-max_len="$(max_len "$t")" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1
            -artifact_prefix="$BUILD/fuzz-artifacts/$t/")
    if [ "$mode" = known ]; then
        dir=fuzz/crashes-known/$t
        [ -d "$dir" ] || return 0
        for f in "$dir"/*; do
            [ -f "$f" ] || continue
            if "$bin" "${common[@]}" "$f" >"$log" 2>&1; then
                summary+=("$(printf '%-16s %-60s fixed (no longer crashes)' "$t" "$f")")
            else
                summary+=("$(printf '%-16s %-60s still crashes' "$t" "$f")")
            fi
        done
        printf '%s\n' "${summary[@]}" >"$BUILD/fuzz-logs/$t.$mode.summary"
        return 0
    fi
    if [ "$mode" = replay ]; then
        # Every committed input once: a crash here is a regression.
        n=$(find "$seeds" -type f | wc -l)
        if ! "$bin" "${common[@]}" -runs=0 "$seeds" >"$log" 2>&1; then
            tail -40 "$log" >&2
            summary+=("$(printf '%-16s replay of %d inputs: CRASH (log %s)' "$t" "$n" "$log")")
            printf '%s\n' "${summary[@]}" >"$BUILD/fuzz-logs/$t.$mode.summary"
            return 1
        fi
        summary+=("$(printf '%-16s replay of %d inputs: ok' "$t" "$n")")
    fi
    # Fuzz: new finds go to the (uncommitted) working corpus; seeds are read, never written.
    start=$(date +%s)
    "$bin" "${common[@]}" -max_total_time="$seconds" "$BUILD/fuzz-corpus/$t" "$seeds" \
        >"$log.fuzz" 2>&1
    status=$?
    elapsed=$(( $(date +%s) - start ))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log.fuzz" | grep -o '[0-9]*$' | tail -1)
    if [ $status -ne 0 ]; then
        tail -60 "$log.fuzz" >&2
        artifact=$(grep -o "Test unit written to .*" "$log.fuzz" | sed 's/Test unit written to //' | tail -1)
        summary+=("$(printf '%-16s fuzz: %s execs in %d s: CRASH %s (log %s)' "$t" "${execs:-?}" "$elapsed" "$artifact" "$log.fuzz")")
        failed=1
    else
        summary+=("$(printf '%-16s fuzz: %s execs in %d s: ok, no crash' "$t" "${execs:-?}" "$elapsed")")
    fi
    printf '%s\n' "${summary[@]}" >"$BUILD/fuzz-logs/$t.$mode.summary"
    return $failed
}

# FUZZ_JOBS targets at a time (each fuzzes in one process; CI runs two on two cores).
export BUILD mode seconds
export -f one_target max_len
failed=0
rm -f "$BUILD"/fuzz-logs/*."$mode".summary
printf '%s\n' "${targets[@]}" |
    xargs -P "${FUZZ_JOBS:-1}" -I{} bash -c 'one_target "$1"' _ {} || failed=1
summary=()
for t in "${targets[@]}"; do
    [ -f "$BUILD/fuzz-logs/$t.$mode.summary" ] && mapfile -t -O "${#summary[@]}" summary <"$BUILD/fuzz-logs/$t.$mode.summary"
done
echo
echo "== fuzz $mode =="
printf '%s\n' "${summary[@]}"
# A crash's reason and input, last, where a CI log's tail shows them, and the input kept outside
# the clone (CI's clone goes away): $AGENCY_CACHE_DIR/fuzz-crashes/<target>/.
keep=${AGENCY_CACHE_DIR:-/var/cache/agency-mcp}/fuzz-crashes
for t in "${targets[@]}"; do
    log=$BUILD/fuzz-logs/$t.$mode.log.fuzz
    grep -q 'CRASH' "$BUILD/fuzz-logs/$t.$mode.summary" 2>/dev/null || continue
    artifact=$(grep -o "Test unit written to .*" "$log" | sed 's/Test unit written to //' | tail -1)
    echo "== $t: why" >&2
    grep -m 8 -E 'mismatch|ERROR: |runtime error|SUMMARY|deadly signal|==[0-9]+==' "$log" >&2 || true
    if [ -n "$artifact" ] && [ -f "$artifact" ]; then
        echo "== $t: the input, base64 (echo ... | base64 -d > input; build-fuzz/fuzz_$t input)" >&2
        base64 -w0 "$artifact" | head -c 12000 >&2
        echo >&2
        if mkdir -p "$keep/$t" 2>/dev/null && cp "$artifact" "$keep/$t/" 2>/dev/null; then
            echo "== $t: kept as $keep/$t/$(basename "$artifact")" >&2
        fi
    fi
done
exit $failed
