#!/usr/bin/env bash
# scripts/function_sizes.py (the function-size half of `make check-sizes`) counts as clang-tidy's
# readability-function-size does: a body of 121 lines is over 120, one of 120 is not, a lambda's
# lines count toward the function that holds it, and a signature over several lines is not
# counted. Usage: function_sizes.sh REPO_ROOT
set -euo pipefail
root=$1
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
write() {  # write FILE NAME BODY_LINES: a function whose body spans BODY_LINES lines
  { echo "int $2(int a,"; echo "       int b) {"; echo "    auto f = [&](int x) {"
    for _ in $(seq 1 $(($3 - 4))); do echo "        a += x;"; done
    echo "    };"; echo "    f(b);"; echo "}"; } >"$1"
}
write "$dir/long.cpp" too_long 121
write "$dir/fits.cpp" just_fits 120
out=$(python3 "$root/scripts/function_sizes.py" 120 "$dir/long.cpp" "$dir/fits.cpp") && status=0 || status=$?
echo "$out"
[ "$status" -eq 1 ] || { echo "FAIL: exit $status, not 1"; exit 1; }
echo "$out" | grep -q "too_long is 121 lines" || { echo "FAIL: too_long not reported as 121 lines"; exit 1; }
echo "$out" | grep -q just_fits && { echo "FAIL: just_fits reported"; exit 1; }
echo "$out" | grep -q __anon && { echo "FAIL: a lambda reported on its own"; exit 1; }
python3 "$root/scripts/function_sizes.py" 120 "$dir/fits.cpp" || { echo "FAIL: 120 lines refused"; exit 1; }
echo PASS
