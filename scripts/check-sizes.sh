#!/usr/bin/env bash
# What keeps the production code readable (issue 16): no file over 600 lines and no function
# over 120 lines in base/ net/ state/ auth/ gateway/ server/ tools/ app/. Sample data
# (gateway/sample/sample_data.cpp) is exempt. Function sizes come from clang-tidy's
# readability-function-size over the build's compile_commands.json (lambdas count toward the
# function that holds them). Usage: scripts/check-sizes.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
max_file_lines=600
max_function_lines=120
exempt='^gateway/sample/sample_data\.cpp$'

files=$(git ls-files 'base/*' 'net/*' 'state/*' 'auth/*' 'gateway/*' 'server/*' 'tools/*' 'app/*' |
        grep -E '\.(cpp|hpp)$' | grep -Ev "$exempt")
status=0
for f in $files; do
    n=$(wc -l <"$f")
    if [ "$n" -gt "$max_file_lines" ]; then
        echo "$f: $n lines (at most $max_file_lines)"
        status=1
    fi
done

command -v clang-tidy >/dev/null || scripts/install-deps.sh clang-tidy
[ -f "$build/compile_commands.json" ] || { echo "no $build/compile_commands.json: build first"; exit 2; }
config="{CheckOptions: [{key: readability-function-size.LineThreshold, value: $max_function_lines}]}"
# The build's flags are GCC's: clang-tidy is told to pass over the warning options it lacks and
# to read C++23 by clang 14's name for it (every file; C++20 code reads the same).
# A file clang-tidy cannot read is a failure, not a pass.
tidy_out=$(echo "$files" | grep -E '\.cpp$' | xargs -P "${JOBS:-2}" -n 4 clang-tidy -p "$build" --quiet \
    --extra-arg=-Wno-unknown-warning-option --extra-arg=-std=c++2b -checks='-*,readability-function-size' \
    -config="$config" 2>&1 || true)
if echo "$tidy_out" | grep -qE '(^|: )error:'; then
    echo "clang-tidy could not read every file:"
    echo "$tidy_out" | grep -E '(^|: )error:' | head -20
    status=1
fi
report=$(echo "$tidy_out" | grep -E 'warning: function .* exceeds' || true)
if [ -n "$report" ]; then
    echo "$report" | sed -E "s|^$PWD/||; s/ exceeds recommended size\/complexity thresholds.*/ is over $max_function_lines lines/"
    status=1
fi
[ "$status" -eq 0 ] && echo "sizes: every file within $max_file_lines lines, every function within $max_function_lines"
exit "$status"
