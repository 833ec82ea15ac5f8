#!/usr/bin/env python3
"""The paths and code names docs/design.md and CONTRIBUTING.md mention still exist (issue 50,
ctest docs.design_names_resolve). Python 3 standard library only; no build needed.

Usage: check_design_names.py SOURCE_DIR
Prints every name that does not resolve, as FILE:LINE, and a count; exits 0 when all resolve,
1 when any does not (or a page is missing).

What is checked, in each page (code blocks included):
- paths: a word that starts with one of the repository's top folders (app/ auth/ base/ bench/
  cmake/ deploy/ docs/ fuzz/ gateway/ net/ schemas/ scripts/ server/ state/ tests/ tools/
  transport/ views/), in backticks or in plain text, and either ends in '/' (a folder) or whose
  last part has an extension (a file: `tools/pipeline/pipeline.cpp`, docs/deploy.md). It resolves when
  `git ls-files` lists it (a folder: a file under it) or it exists on disk. Words without an
  extension or a final '/' are not paths here: `tools/list`, `server/discover`, app/cli.
  A path is read up to the first character that cannot be in one (space, backtick, quote,
  bracket, '<', '*', '#', ','); a final '.', ':' or ';' is the sentence's.
- code names: a backtick span that is a C++ qualified name (`Server::call_tool`,
  `state::SchemaUpgrade`, `Store::draft(id, principal)`) or a function (`read_incoming()`).
  It resolves when its last part (call_tool, SchemaUpgrade, draft, read_incoming) occurs as a
  whole word in a .cpp or .hpp file of a production folder (the folders CMakeLists.txt builds
  its layers from: agency_layer(... DIR folder ...)) or, for the build's own functions
  (`agency_layer()`), in CMakeLists.txt or cmake/*.cmake. A test's helper is looked for in the
  test files named on its line or the lines next to it (`tool_cases()`
  (tests/tools/action_faults_test.cpp ...)), and only there. Names of the C++ standard library (`std::...`) are not the project's and are skipped.

A name that no longer exists is corrected in the page (to what exists now), or its sentence
removed. ALLOWED below is for the few that are meant not to exist, each with its reason.
"""
import os
import re
import subprocess
import sys

PAGES = ["docs/design.md", "CONTRIBUTING.md"]
TOP_FOLDERS = ("app auth base bench cmake deploy docs fuzz gateway net schemas scripts server "
               "state tests tools transport views").split()
# A path: a top folder, then path characters. Not preceded by a path character, so that
# https://example.com/docs/x.md, ../shared/notes.md and build-fuzz/tests/ are not taken.
PATH = re.compile(r"(?<![\w./~-])((?:" + "|".join(TOP_FOLDERS) + r")/[\w./+@-]*)")
EXTENSION = re.compile(r"\.[A-Za-z0-9]+$")
SPAN = re.compile(r"`([^`]+)`")
QUALIFIED = re.compile(r"^(~?[A-Za-z_]\w*(?:::~?[A-Za-z_]\w*)+)(?:\(.*\))?$", re.S)
FUNCTION = re.compile(r"^([A-Za-z_]\w*)\(\)$")
FALLBACK_LAYERS = ["app", "auth", "base", "gateway", "net", "server", "state", "tools",
                   "transport"]

# Paths and names meant not to exist, each with why. Keep it short: a name that went away is
# corrected in the page instead.
ALLOWED = {
    "schemas/list_reviews.input.json":
        "CONTRIBUTING.md's worked example: a tool tried on a scratch branch, not shipped",
    "schemas/list_reviews.output.json":
        "CONTRIBUTING.md's worked example: a tool tried on a scratch branch, not shipped",
    "tests/snapshots/list_reviews.json":
        "CONTRIBUTING.md's worked example: the snapshot make regen would write for it",
}


def tracked_files(src):
    """Every file git tracks under SRC (relative paths), or an empty set without git."""
    try:
        out = subprocess.run(["git", "-C", src, "ls-files", "-z"], capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return set()
    return {p for p in out.decode("utf-8", "replace").split("\0") if p}


def layer_folders(src):
    """The production folders: those CMakeLists.txt builds a layer from (as
    scripts/check-sizes.sh reads them)."""
    try:
        with open(os.path.join(src, "CMakeLists.txt"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return FALLBACK_LAYERS
    folders = re.findall(r"agency_layer\([\w-]+\s[^)]*?\bDIR\s+([a-z/]+)", text)
    return sorted(set(folders)) or FALLBACK_LAYERS


def words_of(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return set(re.findall(r"[A-Za-z_]\w*", f.read()))
    except OSError:
        return set()


def production_words(src, folders):
    """Every identifier-like word of the .cpp and .hpp files under the production folders, and
    of the build's CMake files."""
    words = words_of(os.path.join(src, "CMakeLists.txt"))
    cmake = os.path.join(src, "cmake")
    if os.path.isdir(cmake):
        for name in os.listdir(cmake):
            if name.endswith(".cmake"):
                words |= words_of(os.path.join(cmake, name))
    for folder in folders:
        for root, _, files in os.walk(os.path.join(src, folder)):
            for name in files:
                if name.endswith((".cpp", ".hpp")):
                    words |= words_of(os.path.join(root, name))
    return words


def path_resolves(src, tracked, path):
    if path in ALLOWED:
        return True
    if path.endswith("/"):
        if any(t.startswith(path) for t in tracked):
            return True
        return os.path.isdir(os.path.join(src, path))
    return path in tracked or os.path.exists(os.path.join(src, path))


def paths_in(line):
    """The paths a line mentions, as checked: (path, is_folder)."""
    found = []
    for m in PATH.finditer(line):
        path = m.group(1)
        while path and path[-1] in ".:;":
            path = path[:-1]
        if path.endswith("/") or EXTENSION.search(path.rsplit("/", 1)[-1]):
            found.append(path)
    return found


def without_fences(lines):
    """The page with fenced code blocks blanked (line numbers kept), for the backtick scan:
    a fence's ``` would otherwise pair with a code span's backtick."""
    out, fence = [], None
    for line in lines:
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            out.append("")
        elif fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            out.append("")
        else:
            out.append(line)
    return out


def code_names(text):
    """Backtick spans that are C++ qualified names or functions: (offset, span, last part)."""
    found = []
    for m in SPAN.finditer(text):
        span = " ".join(m.group(1).split())
        q = QUALIFIED.match(span)
        f = FUNCTION.match(span)
        if q:
            name = q.group(1)
            if name.startswith("std::"):
                continue
            last = name.rsplit("::", 1)[-1].lstrip("~")
        elif f:
            last = f.group(1)
        else:
            continue
        found.append((m.start(), span, last))
    return found


def check_page(src, page, tracked, words):
    """The problems of one page, as lines to print."""
    path = os.path.join(src, page)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return [f"{page}: cannot be read ({e.strerror})"], 0, 0
    lines = text.splitlines()
    problems, n_paths, n_names = [], 0, 0
    for number, line in enumerate(lines, 1):
        for p in paths_in(line):
            n_paths += 1
            if not path_resolves(src, tracked, p):
                kind = "folder" if p.endswith("/") else "file"
                problems.append(f"{page}:{number}: no such {kind} in the tree: {p}")
    blanked = "\n".join(without_fences(lines))
    starts = [m.start() for m in re.finditer(r"^", blanked, re.M)]
    for offset, span, last in code_names(blanked):
        n_names += 1
        number = next(i for i in range(len(starts), 0, -1) if starts[i - 1] <= offset)
        near = lines[max(number - 2, 0):number + 1]  # a wrapped sentence: the lines around
        if span in ALLOWED or last in words or any(
                last in words_of(os.path.join(src, p))
                for line in near for p in paths_in(line) if p.startswith("tests/")):
            continue
        problems.append(f"{page}:{number}: `{span}`: no '{last}' in the production sources")
    return problems, n_paths, n_names


def main(src):
    src = os.path.abspath(src)
    tracked = tracked_files(src)
    folders = layer_folders(src)
    words = production_words(src, folders)
    failures, totals = [], []
    for page in PAGES:
        problems, n_paths, n_names = check_page(src, page, tracked, words)
        failures += problems
        totals.append(f"{page}: {n_paths} path(s), {n_names} code name(s)")
    for line in failures:
        print(line)
    print("; ".join(totals) + f" (names looked for in {', '.join(f + '/' for f in folders)}"
          f"{'' if tracked else '; git ls-files gave nothing: paths checked on disk only'})")
    print(f"{len(failures)} unresolved" if failures else "every path and code name resolves")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    sys.exit(main(sys.argv[1]))
