#!/usr/bin/env python3
"""Checks a manual page against its program's --help.

  man_check.py PAGE [--options-in OTHER] [PROGRAM [ARGS...]]

PAGE must format without a warning (groff -man -ww -z). With PROGRAM, the
options `PROGRAM ARGS... --help` lists and the options the page's OPTIONS
section describes must be the same set, short and long names alike. With
--options-in OTHER (a page such as man/dpdat-perf.1), PAGE's OPTIONS section
refers to OTHER's instead of describing them (it must name OTHER, as
`.BR dpdat-perf (1)`), and PROGRAM's options are compared with OTHER's. Exit
0 when they agree, 1 with every difference listed otherwise.
"""
import os
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


def options_section(page):
    lines, in_options = [], False
    for line in open(page, encoding="utf-8").read().splitlines():
        if line.startswith(".SH"):
            in_options = line.split(None, 1)[1:] == ["OPTIONS"]
        elif in_options:
            lines.append(line)
    return lines


def refers_to(page, other):
    """Whether PAGE's OPTIONS section names OTHER's page (.BR name (section))."""
    name, section = os.path.basename(other).rsplit(".", 1)
    ref = re.compile(r"^\.BR\s+" + re.escape(name) + r"\s+\(" + re.escape(section) + r"\)")
    return any(ref.match(line) for line in options_section(page))


def page_options(page):
    opts, tag_next = set(), False
    for line in options_section(page):
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
    usage = "usage: man_check.py PAGE [--options-in OTHER] [PROGRAM [ARGS...]]"
    if len(sys.argv) < 2:
        sys.exit(usage)
    page, prog, options_page = sys.argv[1], sys.argv[2:], sys.argv[1]
    if prog[:1] == ["--options-in"]:
        if len(prog) < 2:
            sys.exit(usage)
        options_page, prog = prog[1], prog[2:]
    problems = [f"groff: {w}" for w in groff_warnings(page)]
    if options_page != page and not refers_to(page, options_page):
        problems.append(f"its OPTIONS section does not refer to {os.path.basename(options_page)}")
    if prog:
        in_help, in_page = help_options(prog), page_options(options_page)
        if not in_help:
            problems.append("--help lists no options")
        for o in sorted(in_help - in_page):
            problems.append(f"{o}: in --help, not in {options_page}")
        for o in sorted(in_page - in_help):
            problems.append(f"{o}: in {options_page}, not in --help")
    for p in problems:
        print(f"FAIL: {page}: {p}")
    if not problems:
        print(f"ok: {page}" + (f" ({len(in_help)} options agree with --help)" if prog else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
