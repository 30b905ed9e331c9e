#!/usr/bin/env python3
"""Checks a manual page against its program's --help.

  man_check.py PAGE [PROGRAM [ARGS...]]

PAGE must format without a warning (groff -man -ww -z). With PROGRAM, the
options `PROGRAM ARGS... --help` lists and the options the page's OPTIONS
section describes must be the same set, short and long names alike. Exit 0
when they agree, 1 with every difference listed otherwise.
"""
import re
import subprocess
import sys

OPT = re.compile(r"(?:^|[\s,\[(])(--?[A-Za-z][A-Za-z0-9-]*)")


def groff_warnings(page):
    r = subprocess.run(["groff", "-man", "-ww", "-z", page], capture_output=True, text=True)
    return [l for l in (r.stderr.splitlines()) if l.strip()] + (
        [f"groff exited {r.returncode}"] if r.returncode != 0 else [])


def help_options(argv):
    r = subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(argv)} --help exited {r.returncode}: {r.stderr.strip()}")
    opts = set()
    for line in r.stdout.splitlines():
        if not re.match(r"\s+-", line):
            continue  # option lines are indented and start with a dash
        spec = re.split(r"\s{2,}", line.strip())[0]  # the column before the description
        opts.update(OPT.findall(spec))
    return opts


def page_options(page):
    text = open(page, encoding="utf-8").read().splitlines()
    opts, in_options, tag_next = set(), False, False
    for line in text:
        if line.startswith(".SH"):
            in_options = line.split(None, 1)[1:] == ["OPTIONS"]
            continue
        if not in_options:
            continue
        if line.startswith(".TP"):
            tag_next = True
            continue
        if tag_next:
            tag_next = False
            plain = re.sub(r"\\f[BIRP]", "", line).replace("\\-", "-").replace('"', " ")
            plain = re.sub(r"^\.\w+\s*", " ", plain)
            opts.update(OPT.findall(plain))
    return opts


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: man_check.py PAGE [PROGRAM [ARGS...]]")
    page, prog = sys.argv[1], sys.argv[2:]
    problems = [f"groff: {w}" for w in groff_warnings(page)]
    if prog:
        in_help, in_page = help_options(prog), page_options(page)
        if not in_help:
            problems.append("--help lists no options")
        for o in sorted(in_help - in_page):
            problems.append(f"{o}: in --help, not in the manual page")
        for o in sorted(in_page - in_help):
            problems.append(f"{o}: in the manual page, not in --help")
    for p in problems:
        print(f"FAIL: {page}: {p}")
    if not problems:
        print(f"ok: {page}" + (f" ({len(in_help)} options agree with --help)" if prog else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
