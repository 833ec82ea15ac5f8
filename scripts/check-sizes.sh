#!/usr/bin/env bash
# What keeps the production code readable (issue 16): no file over 600 lines and no function
# over 120 lines in every production folder: those CMakeLists.txt builds a layer from
# (agency_layer(... DIR folder ...)), read from it so that a new layer is never left out
# (issue 50: transport/ was). Sample data
# (gateway/sample/sample_data.cpp) is exempt. Function sizes come from Universal Ctags
# (scripts/function_sizes.py; lambdas count toward the function that holds them), in about a
# second and without a build. Usage: scripts/check-sizes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
max_file_lines=600
max_function_lines=120
exempt='^gateway/sample/sample_data\.cpp$'

folders=$(sed -n 's/.*agency_layer([A-Za-z_-]* .*DIR \([a-z/]*\).*/\1/p' CMakeLists.txt | sort -u)
[ -n "$folders" ] || { echo "check-sizes: no agency_layer(... DIR ...) in CMakeLists.txt" >&2; exit 2; }
echo "sizes: checking $(echo $folders | sed 's| |/ |g')/"
# shellcheck disable=SC2046
files=$(git ls-files $(for d in $folders; do printf "%s/* " "$d"; done) |
        grep -E '\.(cpp|hpp)$' | grep -Ev "$exempt" | sort -u)
status=0
for f in $files; do
    n=$(wc -l <"$f")
    if [ "$n" -gt "$max_file_lines" ]; then
        echo "$f: $n lines (at most $max_file_lines)"
        status=1
    fi
done

# Function sizes from Universal Ctags (scripts/function_sizes.py), counted as clang-tidy's
# readability-function-size counts them; no build and no second parse of the code.
command -v ctags >/dev/null || scripts/install-test-deps.sh
if ! python3 scripts/function_sizes.py "$max_function_lines" $files; then
    status=1
fi
[ "$status" -eq 0 ] && echo "sizes: every file within $max_file_lines lines, every function within $max_function_lines"
exit "$status"
