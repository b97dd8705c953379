#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the benchmark table of a results.json into docs/performance.md.

usage: table.py [RESULTS.json [PERFORMANCE.md]]
(defaults: bench/results/results.json and docs/performance.md of this checkout)

Replaces what lies between the lines `<!-- bench-table:begin -->` and
`<!-- bench-table:end -->` with a caption (the run's commit, date, machine)
and the table that bench/report.py prints, so docs/performance.md shows one run's
numbers exactly as measured. Refuses a results.json with missing rows
unless given --allow-missing, and a quick (BENCH_QUICK=1) run unless given
--allow-quick.
"""
import json
import os
import sys
import textwrap

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

SCALING_CAPTION = (
    "Scaling, same run (`ndkperf -q N`, each QP on its own thread with the "
    "same iterations): aggregate median (min-max), the ratio to one QP, "
    "and `sw`, the client's voluntary context switches per request (a "
    "polling thread blocks only on a contended lock or to let a sleeper "
    "run, so near 0 means the QPs do not serialize on a lock).")
CPU_CAPTION = (
    "CPU per byte, same runs: the CPU seconds of the client over its timed "
    "loop (getrusage, the `cpu_sec` of its JSON) and of its server from the "
    "client's start to its exit (/proc/PID/stat, clock ticks; connection "
    "setup included), per GB moved; median (min-max) of the repetitions, "
    "and the two sides' ratio within each repetition (paired). On two "
    "cores bandwidth is CPU, so this says where it goes.")
SYSCALL_CAPTION = (
    "System calls per 64 KiB message, from extra runs of each program "
    "with its own server, both under `perf stat` (syscall tracepoints; the "
    "median of each count over three runs since 2026-12-01, one before): "
    "receive (recv*, read*; in brackets those of recvfrom and recvmsg that "
    "found nothing, EAGAIN: a polling receiver's empty polls), send (send*, "
    "write*), wait (poll, epoll) and all system calls, divided by the "
    "messages sent.")
BEGIN = "<!-- bench-table:begin -->"
END = "<!-- bench-table:end -->"


def main(argv):
    flags = {a for a in argv if a.startswith("--")}
    args = [a for a in argv if not a.startswith("--")]
    unknown = flags - {"--allow-missing", "--allow-quick"}
    if unknown or len(args) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    results = args[0] if args else os.path.join(root, "bench", "results",
                                                "results.json")
    readme = args[1] if len(args) > 1 else os.path.join(
        root, "docs", "performance.md")
    res = json.load(open(results))
    if res.get("missing") and "--allow-missing" not in flags:
        print("table.py: %s has missing rows: %s (--allow-missing to "
              "write it anyway)" % (results, "; ".join(res["missing"])),
              file=sys.stderr)
        return 1
    if res.get("meta", {}).get("quick") and "--allow-quick" not in flags:
        print("table.py: %s is from a BENCH_QUICK=1 run "
              "(--allow-quick to write it anyway)" % results,
              file=sys.stderr)
        return 1
    text = open(readme).read()
    lines = text.split("\n")
    try:
        b, e = lines.index(BEGIN), lines.index(END)
    except ValueError:
        print("table.py: %s lacks the lines %s and %s" %
              (readme, BEGIN, END), file=sys.stderr)
        return 1
    if e < b:
        print("table.py: %s: end marker before begin" % readme,
              file=sys.stderr)
        return 1
    body = textwrap.wrap(report.caption(res), 76) + [""] + report.table(res)
    st = report.scaling_table(res)
    if st:
        body += [""] + textwrap.wrap(SCALING_CAPTION, 76) + [""] + st
    ct = report.cpu_table(res)
    if ct:
        body += [""] + textwrap.wrap(CPU_CAPTION, 76) + [""] + ct
    sc = report.syscall_table(res)
    if sc:
        body += [""] + textwrap.wrap(SYSCALL_CAPTION, 76) + [""] + sc
    lines[b + 1:e] = body
    with open(readme, "w") as f:
        f.write("\n".join(lines))
    print("table.py: %d rows written into %s" %
          (len(report.table(res)) - 2, readme))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
