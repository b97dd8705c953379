#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns bench/perftest-guest's raw.txt into results.json and a table.

usage: perftest_guest_report.py OUTDIR META_JSON
Reads OUTDIR/raw.txt, writes OUTDIR/results.json and OUTDIR/table.md, and
prints the table (Markdown) on stdout. Exit status 0, or 1 when a run
failed or gave no number (its row shows how many samples it has).

A row compares ndkperf and perftest on one device and one test. Each side
shows the median and min-max of its rounds; the ratio is ndkperf/perftest
of the medians, with the min-max of the per-round ratios (the two programs
of a round ran back to back).
"""
import json
import os
import statistics
import sys

TESTS = [
    # test, label, unit, better, perftest program
    ("write_bw", "64 KiB RDMA Write bandwidth", "Gb/s", "higher",
     "ib_write_bw"),
    ("read_bw", "64 KiB RDMA Read bandwidth", "Gb/s", "higher",
     "ib_read_bw"),
    ("send_bw", "64 KiB Send bandwidth", "Gb/s", "higher", "ib_send_bw"),
    ("send_lat", "8 B Send latency, p50", "usec", "lower", "ib_send_lat"),
    ("write_lat", "8 B RDMA Write latency, p50", "usec", "lower",
     "ib_write_lat"),
]


def perftest_value(lines, test):
    """Gb/s (10^9 bits) or t_typical (usec) of a perftest client."""
    want = "t_typical" if test.endswith("_lat") else "BW average"
    for i, line in enumerate(lines):
        if "#bytes" in line and want in line and i + 1 < len(lines):
            f = lines[i + 1].split()
            if len(f) < 5 or not f[0].isdigit():
                return None
            if want == "t_typical":  # bytes iters min max typical avg
                return float(f[4])
            # bytes iters peak avg rate: the Gb/s columns have two
            # decimals, the message rate (Mpps) six.
            return float(f[4]) * int(f[0]) * 8 / 1000
    return None


def ndkperf_value(lines, test):
    """Gb/s (10^9 bits) or p50 usec of ndkperf -j."""
    for line in lines:
        if line.startswith("{\"tool\":\"ndkperf\""):
            r = json.loads(line)["results"][0]
            if test.endswith("_lat"):
                return r["p50_usec"]
            return r["mb_per_sec"] * 8 / 1000
    return None


def parse(path):
    """{(device, test, tool): {round: value or None}}, failures, links."""
    runs, fails, links = {}, [], []
    cur, body = None, []
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("@@link"):
                links.append(line[7:].strip())
            elif line.startswith("@@rc "):
                if cur:
                    dev, test, tool, rnd = cur
                    v = (perftest_value if tool == "perftest" else
                         ndkperf_value)(body, test)
                    rc = int(line.split()[1])
                    if rc != 0 or v is None:
                        fails.append({"run": " ".join(cur), "status": rc,
                                      "output": body[-10:]})
                        v = None
                    runs.setdefault((dev, test, tool), {})[int(rnd)] = v
                cur, body = None, []
            elif line.startswith("@@ "):
                cur, body = line.split()[1:5], []
            elif cur:
                body.append(line)
    return runs, fails, links


def summary(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals),
            "max": max(vals), "n": len(vals), "samples": vals}


def fmt(v):
    return "%.0f" % v if abs(v) >= 100 else "%.2f" % v if abs(v) >= 1 \
        else "%.3f" % v


def cell(s, reps):
    if not s:
        return "missing"
    text = "%s (%s-%s)" % (fmt(s["median"]), fmt(s["min"]), fmt(s["max"]))
    if s["n"] < reps:
        text += " n=%d" % s["n"]
    return text


def build(runs, meta):
    rows = []
    devices = sorted({k[0] for k in runs}, key=["siw", "rxe"].index)
    for dev in devices:
        for test, label, unit, better, prog in TESTS:
            ours = runs.get((dev, test, "ndkperf"), {})
            base = runs.get((dev, test, "perftest"), {})
            so, sb = summary(ours.values()), summary(base.values())
            per_round = [ours[r] / base[r] for r in ours
                         if ours[r] and base.get(r)]
            rows.append({
                "device": dev + "0", "test": test, "metric": label,
                "unit": unit, "better": better, "baseline": prog,
                "ndkperf": so, "perftest": sb,
                "ratio": so["median"] / sb["median"] if so and sb else None,
                "round_ratios": summary(per_round),
            })
    return {"meta": meta, "rows": rows}


def table(res):
    reps = res["meta"].get("reps", 0)
    out = ["| Device | Metric | ndkperf: median (min-max) | "
           "perftest: median (min-max) | ndkperf/perftest (per-round "
           "min-max) |", "|---|---|---|---|---|"]
    for r in res["rows"]:
        rr = r["round_ratios"]
        ratio = ("%.2f (%.2f-%.2f)%s" % (
            r["ratio"], rr["min"], rr["max"],
            "" if rr["n"] == reps else " n=%d" % rr["n"])
            if r["ratio"] is not None and rr else "n/a")
        out.append("| %s | %s (%s, %s is better) | %s | `%s`: %s | %s |" % (
            r["device"], r["metric"], r["unit"], r["better"],
            cell(r["ndkperf"], reps), r["baseline"],
            cell(r["perftest"], reps), ratio))
    return out


def caption(res):
    m = res["meta"]
    return ("`bench/perftest-guest` (REPS=%s, BW_ITERS=%s, LAT_ITERS=%s) at "
            "commit %s, %s, perftest %s, one boot of the interop guest "
            "(qemu TCG, 2 vCPUs on a %s-CPU host), both ends on 10.0.2.15. "
            "**TCG-emulated numbers, not performance figures**: only the "
            "ratio of the two programs on the same emulated device means "
            "something." % (
                m.get("reps"), m.get("bw_iters"), m.get("lat_iters"),
                m.get("commit"), m.get("date"), m.get("perftest"),
                m.get("host_cpus")))


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, meta = argv[1], json.loads(argv[2])
    runs, fails, links = parse(os.path.join(out, "raw.txt"))
    meta["links"] = links
    res = build(runs, meta)
    res["failures"] = fails
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    text = [caption(res), ""] + table(res)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(text) + "\n")
    print("\n".join(text))
    for fl in fails:
        print("failed: %s (status %d)" % (fl["run"], fl["status"]),
              file=sys.stderr)
        for line in fl["output"]:
            print("    | " + line, file=sys.stderr)
    return 1 if fails or not runs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
