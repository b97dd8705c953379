#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns bench/run's raw samples into medians, ratios and plots.

usage: report.py RAW.jsonl OUTDIR
Writes OUTDIR/results.json, OUTDIR/latency.png and OUTDIR/bandwidth.png,
and prints the ratio table (Markdown) on stdout.
"""
import json
import os
import statistics
import subprocess
import sys


def load(path):
    samples = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        rec = json.loads(line)
        data = rec["data"]
        if isinstance(data, dict) and "results" in data:
            data = data["results"][0]
        samples.setdefault((rec["metric"], rec["size"]), []).append(data)
    return samples


def value(samples, metric, key, size=None):
    """Median of one field over the repetitions of a metric."""
    vals = []
    for (m, s), runs in samples.items():
        if m != metric or (size is not None and s != size):
            continue
        for r in runs:
            v = r.get(key)
            if key == "conn_per_sec" and v is None and r.get("seconds"):
                v = r["iters"] / r["seconds"]
            if key == "msgs_per_sec" and v is None and r.get("usec_per_xfer"):
                v = 1e6 / r["usec_per_xfer"]
            if v is not None:
                vals.append(float(v))
    return statistics.median(vals) if vals else None


# (label, ours (metric, key), baseline label, baseline (metric, key),
#  better: "lower"/"higher", target ratio or None)
ROWS = [
    ("8 B send/recv one-way latency, p50",
     ("send_lat", "p50_usec"), "plain TCP ping-pong (tcp_bench)",
     ("tcp_lat", "p50_usec"), "lower", 1.15),
    ("8 B send/recv one-way latency, p50",
     ("send_lat", "p50_usec"), "TCP ping-pong (sockperf, 14 B)",
     ("sockperf", "p50_usec"), "lower", None),
    ("8 B send/recv one-way latency",
     ("send_lat", "usec_per_xfer"), "libfabric tcp (fi_pingpong)",
     ("fi_pingpong", "usec_per_xfer"), "lower", None),
    ("8 B RDMA write one-way latency, p50",
     ("write_lat", "p50_usec"), "plain TCP ping-pong (tcp_bench)",
     ("tcp_lat", "p50_usec"), "lower", None),
    ("8 B RDMA read round trip, p50",
     ("read_lat", "p50_usec"), "plain TCP one-way (tcp_bench)",
     ("tcp_lat", "p50_usec"), "lower", 2.5),
    ("64 KiB send bandwidth",
     ("send_bw", "mb_per_sec"), "libfabric tcp (lf_bench msg_bw)",
     ("lf_msg_bw", "mb_per_sec"), "higher", 1.0),
    ("64 KiB send bandwidth",
     ("send_bw", "mb_per_sec"), "plain TCP stream (iperf3)",
     ("iperf3", "mb_per_sec"), "higher", None),
    ("64 KiB RDMA write bandwidth",
     ("write_bw", "mb_per_sec"), "libfabric tcp (lf_bench write_bw)",
     ("lf_write_bw", "mb_per_sec"), "higher", 1.0),
    ("64 KiB RDMA read bandwidth",
     ("read_bw", "mb_per_sec"), "libfabric tcp (lf_bench read_bw)",
     ("lf_read_bw", "mb_per_sec"), "higher", None),
    ("8 B message rate",
     ("msg_rate", "msgs_per_sec"), "libfabric tcp (lf_bench msg_bw 8 B)",
     ("lf_msg_rate", "msgs_per_sec"), "higher", None),
    ("64 KiB RDMA write bandwidth, DEFER bursts (ndkperf -B)",
     ("write_bw_defer", "mb_per_sec"), "libfabric tcp (lf_bench write_bw)",
     ("lf_write_bw", "mb_per_sec"), "higher", None),
    ("8 B message rate, DEFER bursts (ndkperf -B)",
     ("msg_rate_defer", "msgs_per_sec"),
     "libfabric tcp (lf_bench msg_bw 8 B)",
     ("lf_msg_rate", "msgs_per_sec"), "higher", None),
    ("connect+accept+complete, 64 B private data, p50",
     ("conn", "p50_usec"), "TCP connect + 64 B request/reply",
     ("tcp_conn", "p50_usec"), "lower", 2.0),
    ("connection rate (sequential)",
     ("conn", "conn_per_sec"), "libfabric tcp fi_connect (lf_bench)",
     ("lf_conn", "conn_per_sec"), "higher", 1.0),
]


def fmt(v):
    if v is None:
        return "n/a"
    if v >= 100:
        return "%.0f" % v
    return "%.2f" % v


def main():
    raw, out = sys.argv[1], sys.argv[2]
    s = load(raw)
    table = []
    print("| Metric | libndk | Baseline | Baseline value | Ratio (ours/base) | Target | Holds |")
    print("|---|---|---|---|---|---|---|")
    for label, ours, blabel, base, better, target in ROWS:
        o = value(s, *ours)
        b = value(s, *base)
        ratio = o / b if o is not None and b else None
        holds = None
        if ratio is not None and target is not None:
            holds = ratio <= target if better == "lower" else ratio >= target
        unit = ours[1].replace("_", " ")
        table.append({"metric": label, "unit": unit, "libndk": o,
                      "baseline": blabel, "baseline_value": b,
                      "ratio": ratio, "better": better, "target": target,
                      "holds": holds})
        tgt = ("%s %.2f" % ("<=" if better == "lower" else ">=", target)
               if target is not None else "-")
        print("| %s (%s) | %s | %s | %s | %s | %s | %s |" % (
            label, unit, fmt(o), blabel, fmt(b),
            "%.2f" % ratio if ratio is not None else "n/a", tgt,
            {True: "yes", False: "no", None: "-"}[holds]))
    hold = value(s, "hold", "bytes_per_connection")
    shold = value(s, "hold", "server_bytes_per_connection")
    nheld = value(s, "hold", "iters")
    print("| %s connections held at once: memory per connection, client / server | %s / %s KiB | - | - | - | <= 64 KiB | %s |" % (
        fmt(nheld), fmt(hold / 1024 if hold else None),
        fmt(shold / 1024 if shold else None),
        "yes" if hold and shold and max(hold, shold) <= 65536 else "no"))

    sweeps = {}
    for (m, size), runs in s.items():
        if m.startswith("sweep_"):
            key = "p50_usec" if "lat" in m else "mb_per_sec"
            sweeps.setdefault(m, []).append((size, value(s, m, key, size)))
    for v in sweeps.values():
        v.sort()
    json.dump({"ratios": table,
               "hold": {"connections": nheld,
                        "client_bytes_per_connection": hold,
                        "server_bytes_per_connection": shold},
               "sweeps": sweeps}, open(os.path.join(out, "results.json"),
                                       "w"), indent=1)
    plot(out, sweeps)


def plot(out, sweeps):
    def series(names, path, ylabel, title):
        cmds = ["set terminal png size 900,540 noenhanced",
                "set output '%s'" % path,
                "set format x '%.0b%B'",
                "set logscale x 2", "set logscale y",
                "set xlabel 'message size (bytes)'",
                "set ylabel '%s'" % ylabel, "set title '%s'" % title,
                "set key top left", "set grid"]
        plots = []
        for name, label in names:
            pts = [p for p in sweeps.get(name, []) if p[1]]
            if not pts:
                continue
            dat = os.path.join(out, name + ".dat")
            with open(dat, "w") as f:
                for x, y in pts:
                    f.write("%d %f\n" % (x, y))
            plots.append("'%s' using 1:2 with linespoints title '%s'" %
                         (dat, label))
        if not plots:
            return
        cmds.append("plot " + ", ".join(plots))
        subprocess.run(["gnuplot"], input="\n".join(cmds), text=True,
                       check=False)

    series([("sweep_send_lat", "libndk send/recv (ndkperf send_lat)"),
            ("sweep_write_lat", "libndk RDMA write (ndkperf write_lat)"),
            ("sweep_tcp_lat", "plain TCP ping-pong (tcp_bench)")],
           os.path.join(out, "latency.png"), "one-way latency p50 (usec)",
           "Latency against message size, loopback")
    series([("sweep_send_bw", "libndk send (ndkperf send_bw)"),
            ("sweep_write_bw", "libndk RDMA write (ndkperf write_bw)"),
            ("sweep_lf_msg_bw", "libfabric tcp send (lf_bench msg_bw)"),
            ("sweep_lf_write_bw", "libfabric tcp RMA write (lf_bench)")],
           os.path.join(out, "bandwidth.png"), "MB/s",
           "Bandwidth against message size, loopback")


if __name__ == "__main__":
    main()
