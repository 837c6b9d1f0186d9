#!/usr/bin/env python3
"""Checks the size and layering aims of docs/architecture.md over the tracked sources.

- no source file over 450 lines, no function over 80 lines (data tables listed in
  DATA_TABLES are exempt: they grow with the table, not with logic);
- SQL statements only under agent/store/ (tests and fuzzers may write SQL to build the
  broken databases they test against);
- no include from agent/gate/ or agent/memory/ into agent/runner/.
Prints one line per violation and exits 1 if there is any, 0 otherwise, 2 on bad usage.
Usage: scripts/check_structure.py [--list-functions N]   (N: also list functions over N lines)
"""
import os
import re
import subprocess
import sys

MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 80
SOURCE_ENDINGS = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh")
# path -> why it may exceed the limits (the whole file or its functions)
DATA_TABLES = {
    "trainer/switches/switch_table.cpp": "the switch table: one entry per switch",
    "agent/dashboard/assets.hpp": "the dashboard's HTML/JS as string literals",
    "agent/dashboard/page.hpp": "the dashboard's HTML/JS as string literals",
    "agent/dashboard/page_script.hpp": "the dashboard's HTML/JS as string literals",
}
# SQL keywords as the store writes them (upper case), at the start of a string literal.
SQL = re.compile(r'"\s*(SELECT\s+[\w*(]|INSERT\s+(OR\s+[A-Z]+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b|'
                 r'DELETE\s+FROM\b|CREATE\s+(TABLE|INDEX|VIEW)\b|ALTER\s+TABLE\b|PRAGMA\s+\w)')
CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*$")


def tracked_sources(root):
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                         check=True).stdout.split()
    return [p for p in out if p.endswith(SOURCE_ENDINGS) and not p.startswith("third_party/")]


def strip_comments_and_strings(text):
    """Blanks comments and string/char literals, keeping newlines (so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, line count) of each function body at namespace or class scope."""
    code = strip_comments_and_strings(text)
    code = re.sub(r"^\s*#.*$", "", code, flags=re.M)  # preprocessor lines
    found, stack, last = [], [], 0  # stack: 'scope' (namespace/class/other) or 'func'
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            head = code[last:i].strip()
            in_func = "func" in [k for k, _, _ in stack]
            is_func = (not in_func and re.search(r"\)\s*(const|noexcept|override|final|mutable|"
                                                  r"->\s*[\w:<>,\s*&]+|:[^;]*|\s)*$", head)
                       and not CONTROL.search(head.split("(")[0])
                       and not re.search(r"=\s*$", head))
            if is_func and re.match(r"^(namespace|class|struct|union|enum|extern)\b", head):
                is_func = False
            name = ""
            if is_func:
                m = re.search(r"([~\w:]+(?:<[^(]*>)?|operator\s*\S+)\s*\(", head)
                name = m.group(1) if m else head[:40]
            stack.append(("func" if is_func else "scope", line, name))
            last = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "func":
                    found.append((name, start, line - start + 1))
            last = i + 1
        elif c == ";":
            last = i + 1
    return found


def main(argv):
    list_over = None
    if argv[1:2] == ["--list-functions"] and len(argv) == 3 and argv[2].isdigit():
        list_over = int(argv[2])
    elif len(argv) > 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                          text=True, check=True).stdout.strip()
    problems = []
    for path in tracked_sources(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        exempt = path in DATA_TABLES
        lines = text.count("\n")
        if lines > MAX_FILE_LINES and not exempt:
            problems.append(f"{path}: {lines} lines (at most {MAX_FILE_LINES})")
        for name, start, length in functions(text):
            if list_over is not None and length > list_over:
                print(f"{path}:{start}: {name} {length} lines")
            if length > MAX_FUNCTION_LINES and not exempt:
                problems.append(f"{path}:{start}: function {name} is {length} lines "
                                f"(at most {MAX_FUNCTION_LINES})")
        if not path.startswith(("agent/store/", "tests/", "fuzz/")):
            for m in SQL.finditer(text):
                ln = text.count("\n", 0, m.start()) + 1
                problems.append(f"{path}:{ln}: SQL outside agent/store/")
        if path.startswith(("agent/gate/", "agent/memory/")):
            for m in re.finditer(r'#include\s+"agent/runner/', text):
                ln = text.count("\n", 0, m.start()) + 1
                problems.append(f"{path}:{ln}: includes agent/runner/ (gate and memory must not)")
    for p in problems:
        print(p)
    print(f"check_structure: {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
