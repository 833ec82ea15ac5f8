#!/usr/bin/env python3
"""Functions longer than a limit, from Universal Ctags' tags (line and end of each function).

Usage: scripts/function_sizes.py LIMIT FILE...  prints "FILE:LINE: function NAME is N lines"
for each function whose body runs over LIMIT lines, and exits 1 when there is one.

A function's size is counted as clang-tidy's readability-function-size counts it: the lines
from its body's opening brace to its closing one. Lambdas count toward the function
that holds them (ctags names them __anon...; they are not reported on their own). ctags reads
the files without compiling them, so the check needs no build and takes seconds.
"""
import json
import subprocess
import sys


def body_start(lines, first, last):
    """The line (1-based) of the body's opening brace: the first '{' at or after the
    declaration's first line that is not inside the parameter list's parentheses."""
    depth = 0
    for n in range(first, last + 1):
        text = lines[n - 1]
        in_string = None
        i = 0
        while i < len(text):
            c = text[i]
            if in_string:
                if c == '\\':
                    i += 1
                elif c == in_string:
                    in_string = None
            elif c in '"\'':
                in_string = c
            elif text.startswith('//', i):
                break
            elif c == '(':
                depth += 1
            elif c == ')':
                depth -= 1
            elif c == '{' and depth == 0:
                return n
            i += 1
    return first


def main():
    limit = int(sys.argv[1])
    files = sys.argv[2:]
    out = subprocess.run(
        ['ctags', '--output-format=json', '--fields=+ne', '--kinds-C++=f', '--language-force=C++',
         '-f', '-'] + files, check=True, capture_output=True, text=True).stdout
    cache = {}
    over = []
    for row in out.splitlines():
        tag = json.loads(row)
        if tag.get('_type') != 'tag' or tag['name'].startswith('__anon') or 'end' not in tag:
            continue
        path = tag['path']
        if path not in cache:
            with open(path, encoding='utf-8', errors='replace') as f:
                cache[path] = f.read().split('\n')
        start = body_start(cache[path], tag['line'], tag['end'])
        size = tag['end'] - start
        if size > limit:
            over.append(f"{path}:{tag['line']}: function {tag.get('scope', '') and tag['scope'] + '::'}"
                        f"{tag['name']} is {size} lines (at most {limit})")
    for line in sorted(over):
        print(line)
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
