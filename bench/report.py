#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns bench/run's raw samples into medians, ratios and plots.

usage: report.py RAW.jsonl OUTDIR
Writes OUTDIR/results.json, OUTDIR/latency.png and OUTDIR/bandwidth.png,
and prints the table (Markdown) on stdout. Exit status 0, or 3 when a row
has no sample on one of its sides (the missing rows are named on stderr).

Every row compares the two sides of one pair of bench/run: the samples of
each side come from the runs of that pair only, where the two programs ran
back to back, or (sliced pairs) at once, one at a time in short slices. A
row's ratio is the ratio of the two medians, and a target holds only if
that ratio meets it. Beside it, the paired ratio: the ratio
of the two sides within each repetition, median (min-max) over the
repetitions, which a machine that changes speed between repetitions moves
less. A row whose two values come from the same run (the Write mean
against its own p50) has no two sides: its ratio is the median of the
per-run ratios, since a ratio of medians would set the mean of one run
against the p50 of another.
"""
import json
import os
import statistics
import subprocess
import sys

MISSING_STATUS = 3


class Row:
    def __init__(self, label, pair, ours, base, bname, better, target=None,
                 primary=False, min_cpus=None, same_run=False):
        self.label, self.pair = label, pair
        # Both values from one run of one program: the ratio is per run.
        self.same_run = same_run
        self.ours, self.base = ours, base  # (metric, key)
        self.bname, self.better = bname, better
        self.target, self.primary = target, primary
        # A target that needs more CPUs than the machine has is a limit
        # of the machine: the row still says whether it holds, and why not.
        self.min_cpus = min_cpus


LAT = "usec"
BW = "MB/s"
# The rows with targets first (primary), then the secondary rows.
ROWS = [
    # The p50 and bandwidth rows with targets come from sliced pairs
    # (bench/slicer: both sides at once, one running at a time; a rate is
    # over the time its side ran); means, which a slice boundary inside a
    # round trip would move, from the same latency pairs run back to back.
    Row("8 B send one-way p50 (usec), sliced", "send_lat",
        ("send_lat", "p50_usec"), ("tcp_poll_lat", "p50_usec"),
        "busy-poll TCP ping-pong", "lower", 1.10, True),
    Row("8 B send one-way mean (usec)", "send_lat_b2b",
        ("send_lat", "mean_usec"), ("tcp_poll_lat", "mean_usec"),
        "busy-poll TCP ping-pong", "lower", None, True),
    Row("8 B RDMA Write one-way p50 (usec), sliced", "write_lat",
        ("write_lat", "p50_usec"), ("tcp_poll_lat", "p50_usec"),
        "busy-poll TCP ping-pong", "lower", 1.15, True),
    Row("8 B RDMA Write one-way mean (usec), against its own p50",
        "write_lat_b2b", ("write_lat", "mean_usec"),
        ("write_lat", "p50_usec"), "libndk's p50, same runs", "lower", 1.3,
        True, same_run=True),
    Row("8 B RDMA Read round trip p50 (usec), sliced", "read_lat",
        ("read_lat", "p50_usec"), ("tcp_poll_lat", "p50_usec"),
        "busy-poll TCP one-way", "lower", 2.3, True),
    Row("64 KiB RDMA Write bandwidth (MB/s), sliced", "write_bw_lf",
        ("write_bw", "mb_per_sec"), ("lf_write_bw", "mb_per_sec"),
        "libfabric tcp (lf_bench write_bw)", "higher", 1.0, True),
    Row("64 KiB Send bandwidth (MB/s), sliced", "send_bw_lf",
        ("send_bw", "mb_per_sec"), ("lf_msg_bw", "mb_per_sec"),
        "libfabric tcp (lf_bench msg_bw)", "higher", 1.0, True),
    Row("64 KiB RDMA Read bandwidth (MB/s), sliced", "read_bw_lf",
        ("read_bw", "mb_per_sec"), ("lf_read_bw", "mb_per_sec"),
        "libfabric tcp (lf_bench read_bw)", "higher", 1.0, True),
    Row("64 KiB RDMA Write bandwidth (MB/s), sliced", "write_bw_tcp",
        ("write_bw", "mb_per_sec"), ("tcp_poll_bw", "mb_per_sec"),
        "busy-poll TCP stream", "higher", 0.8, True),
    Row("4 QPs aggregate 64 KiB RDMA Write bandwidth (MB/s)",
        "write_bw_qps", ("write_bw_q4", "mb_per_sec"),
        ("write_bw", "mb_per_sec"), "libndk, one QP", "higher", 1.5, True,
        min_cpus=4),
    Row("8 B message rate, DEFER bursts (`ndkperf -B`) (msgs/s)",
        "msg_rate_defer_lf", ("msg_rate_defer", "msgs_per_sec"),
        ("lf_msg_rate", "msgs_per_sec"), "libfabric tcp (lf_bench msg_bw 8 B)",
        "higher", 3.0, True),
    Row("8 B send one-way p50 (usec), back to back", "send_lat_b2b",
        ("send_lat", "p50_usec"), ("tcp_poll_lat", "p50_usec"),
        "busy-poll TCP ping-pong", "lower"),
    Row("8 B RDMA Write one-way p50 (usec), back to back", "write_lat_b2b",
        ("write_lat", "p50_usec"), ("tcp_poll_lat", "p50_usec"),
        "busy-poll TCP ping-pong", "lower"),
    Row("8 B RDMA Read round trip p50 (usec), back to back", "read_lat_b2b",
        ("read_lat", "p50_usec"), ("tcp_poll_lat", "p50_usec"),
        "busy-poll TCP one-way", "lower"),
    Row("8 B send one-way p50 (usec)", "send_lat_tcpblk",
        ("send_lat", "p50_usec"), ("tcp_lat", "p50_usec"),
        "blocking TCP ping-pong (tcp_bench lat)", "lower"),
    Row("8 B RDMA Write one-way p50 (usec)", "write_lat_tcpblk",
        ("write_lat", "p50_usec"), ("tcp_lat", "p50_usec"),
        "blocking TCP ping-pong (tcp_bench lat)", "lower"),
    Row("8 B RDMA Read round trip p50 (usec)", "read_lat_tcpblk",
        ("read_lat", "p50_usec"), ("tcp_lat", "p50_usec"),
        "blocking TCP one-way (tcp_bench lat)", "lower"),
    Row("8 B send one-way p50 (usec)", "send_lat_sockperf",
        ("send_lat", "p50_usec"), ("sockperf", "p50_usec"),
        "TCP ping-pong (sockperf, 14 B)", "lower"),
    Row("8 B send one-way mean (usec)", "send_lat_fi",
        ("send_lat", "mean_usec"), ("fi_pingpong", "usec_per_xfer"),
        "libfabric tcp (fi_pingpong)", "lower"),
    Row("64 KiB Send bandwidth (MB/s)", "send_bw_iperf",
        ("send_bw", "mb_per_sec"), ("iperf3", "mb_per_sec"),
        "TCP stream (iperf3)", "higher"),
    Row("8 B message rate (msgs/s)", "msg_rate_lf",
        ("msg_rate", "msgs_per_sec"), ("lf_msg_rate", "msgs_per_sec"),
        "libfabric tcp (lf_bench msg_bw 8 B)", "higher"),
    Row("64 KiB RDMA Write bandwidth, DEFER bursts (`ndkperf -B`) (MB/s)",
        "write_bw_defer_lf", ("write_bw_defer", "mb_per_sec"),
        ("lf_write_bw", "mb_per_sec"), "libfabric tcp (lf_bench write_bw)",
        "higher"),
    Row("64 KiB RDMA Write bandwidth, MPA CRC off (`NDK_MPA_CRC=0`) (MB/s)",
        "write_bw_nocrc_lf", ("write_bw_nocrc", "mb_per_sec"),
        ("lf_write_bw", "mb_per_sec"), "libfabric tcp (lf_bench write_bw)",
        "higher"),
    Row("64 KiB Send bandwidth, MPA CRC off (`NDK_MPA_CRC=0`) (MB/s)",
        "send_bw_nocrc_lf", ("send_bw_nocrc", "mb_per_sec"),
        ("lf_msg_bw", "mb_per_sec"), "libfabric tcp (lf_bench msg_bw)",
        "higher"),
    Row("connect+accept+complete, 64 B private data, p50 (usec)", "conn_tcp",
        ("conn", "p50_usec"), ("tcp_conn", "p50_usec"),
        "TCP connect + 64 B request/reply", "lower", 2.0),
    Row("connection rate, sequential (conn/s)", "conn_lf",
        ("conn", "conn_per_sec"), ("lf_conn", "conn_per_sec"),
        "libfabric tcp fi_connect (lf_bench)", "higher", 1.0),
]

# The veth topology repeats these rows (bench/run, VETH_PAIRS); a run
# without it (BENCH_VETH=0, not root) has none of them.
VETH = ("send_lat", "write_lat", "read_lat", "send_lat_b2b", "write_lat_b2b",
        "read_lat_b2b", "write_bw_lf", "send_bw_lf",
        "read_bw_lf", "write_bw_tcp", "write_bw_nocrc_lf",
        "send_bw_nocrc_lf")
ROWS += [Row("veth: " + r.label, r.pair + "_veth", r.ours, r.base, r.bname,
             r.better, r.target, r.primary)
         for r in ROWS if r.pair in VETH
         and not r.label.startswith("8 B RDMA Write one-way mean")]

HOLD_TARGET_BYTES = 65536


def load(path):
    """(meta, samples {(pair, metric, size): [data]}, failures [dict])"""
    meta, samples, failures = {}, {}, []
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        rec = json.loads(line)
        if "meta" in rec:
            meta = rec["meta"]
            continue
        if "error" in rec:
            failures.append(rec)
            continue
        data = rec["data"]
        if isinstance(data, dict) and "results" in data:
            data = data["results"][0]
        if isinstance(data, dict) and rec.get("cpu_s"):
            data = dict(data, cpu_s=rec["cpu_s"])
        if isinstance(data, dict) and rec.get("rep") is not None:
            data = dict(data, _rep=rec["rep"])
        samples.setdefault((rec.get("pair", "-"), rec["metric"],
                            rec["size"]), []).append(data)
    return meta, samples, failures


def field(r, key):
    v = r.get(key)
    if v is None and key == "conn_per_sec" and r.get("seconds"):
        v = r["iters"] / r["seconds"]
    if v is None and key == "msgs_per_sec":
        if r.get("mxfers_per_sec"):
            v = r["mxfers_per_sec"] * 1e6
        elif r.get("usec_per_xfer"):
            v = 1e6 / r["usec_per_xfer"]
    if v is None and key == "mean_usec" and "p50_usec" in r:
        # ndkperf before mean_usec: usec/xfer is the latency tests' mean.
        v = r.get("usec_per_xfer")
    return None if v is None else float(v)


def values(samples, pair, metric, key, size=None):
    vals = []
    for (p, m, s), runs in samples.items():
        if p != pair or m != metric or (size is not None and s != size):
            continue
        vals += [v for v in (field(r, key) for r in runs) if v is not None]
    return vals


def by_rep(samples, pair, metric, value):
    """{repetition: value(run)} of one side of a pair, when each
    repetition has one sample of it."""
    reps = {}
    for (p, m, _), runs in samples.items():
        if p != pair or m != metric:
            continue
        for r in runs:
            v, rep = value(r), r.get("_rep")
            if v is None or rep is None:
                continue
            if rep in reps:
                return {}
            reps[rep] = v
    return reps


def paired(samples, pair, ours, base):
    """The two sides' ratio within each repetition: median, min, max and
    the values, or None. ours, base: (metric, value of a run)."""
    o, b = by_rep(samples, pair, *ours), by_rep(samples, pair, *base)
    return summary([o[k] / b[k] for k in sorted(o) if k in b and b[k]])


def field_of(key):
    return lambda r: field(r, key)


def summary(vals):
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals),
            "max": max(vals), "n": len(vals), "samples": vals}


def cpu_limit(meta, r):
    """Why a row's target is out of this machine's reach, or None: one
    polling QP already keeps a client and a server core busy."""
    cpus = meta.get("cpus")
    if r.min_cpus is None or not cpus or cpus >= r.min_cpus:
        return None
    return "device limit: %d CPUs, the target needs %d" % (cpus, r.min_cpus)


def build(meta, samples, failures):
    rows, missing = [], []
    veth = any(p.endswith("_veth") for (p, _, _) in samples)
    for r in ROWS:
        if r.pair.endswith("_veth") and not veth:
            continue
        o = summary(values(samples, r.pair, *r.ours))
        b = summary(values(samples, r.pair, *r.base))
        ratio = o["median"] / b["median"] if o and b and b["median"] else None
        pr = paired(samples, r.pair, (r.ours[0], field_of(r.ours[1])),
                    (r.base[0], field_of(r.base[1])))
        if r.same_run:
            ratio = pr["median"] if pr else None
        holds = None
        if ratio is not None and r.target is not None:
            holds = (ratio <= r.target if r.better == "lower"
                     else ratio >= r.target)
        if ratio is None:
            missing.append("%s [%s]" % (r.label, r.pair))
        rows.append({"metric": r.label, "pair": r.pair,
                     "primary": r.primary, "libndk": o,
                     "baseline": r.bname, "baseline_value": b,
                     "ratio": ratio,
                     "paired": pr, "same_run": r.same_run,
                     "better": r.better,
                     "target": r.target, "holds": holds,
                     "limit": cpu_limit(meta, r),
                     "missing": ratio is None})
    hold = {}
    h = samples.get(("hold", "hold", 0))
    if h:
        d = h[0]
        hold = {"connections": d.get("iters"),
                "client_bytes_per_connection": d.get("bytes_per_connection"),
                "server_bytes_per_connection":
                    d.get("server_bytes_per_connection")}
    else:
        missing.append("connections held at once [hold]")
    sweeps = {}
    for (p, m, size) in samples:
        if p == "sweep":
            key = "p50_usec" if "lat" in m else "mb_per_sec"
            vals = values(samples, p, m, key, size)
            if vals:
                sweeps.setdefault(m, []).append(
                    (size, statistics.median(vals)))
    for v in sweeps.values():
        v.sort()
    return {"meta": meta, "rows": rows, "hold": hold, "sweeps": sweeps,
            "scaling": scaling(samples),
            "cpu": cpu_per_gb(samples),
            "syscalls": syscalls(samples),
            "missing": missing,
            "failures": ["%s/%s (repetition %s): %s" % (
                f.get("pair"), f.get("metric"), f.get("rep"), f.get("error"))
                for f in failures]}


# CPU seconds of both processes (client and server) per GB moved, for the
# bandwidth pairs: (pair, libndk metric, baseline metric, baseline name).
CPU_PAIRS = [
    ("write_bw_lf", "write_bw", "lf_write_bw", "libfabric tcp"),
    ("send_bw_lf", "send_bw", "lf_msg_bw", "libfabric tcp"),
    ("read_bw_lf", "read_bw", "lf_read_bw", "libfabric tcp"),
    ("write_bw_tcp", "write_bw", "tcp_poll_bw", "busy-poll TCP stream"),
    ("write_bw_nocrc_lf", "write_bw_nocrc", "lf_write_bw",
     "libfabric tcp, libndk's MPA CRC off"),
    ("send_bw_nocrc_lf", "send_bw_nocrc", "lf_msg_bw",
     "libfabric tcp, libndk's MPA CRC off"),
]
CPU_PAIRS += [(p + "_veth", o, b, n) for p, o, b, n in CPU_PAIRS]


def cpu_s_per_gb(r):
    """The client's CPU over its timed loop (its own cpu_sec; else its
    whole run), plus its server's during the run, per GB moved."""
    cpu = r.get("cpu_s") or {}
    moved = r.get("total_bytes") or (r.get("bytes", 0) * r.get("iters", 0))
    client = r.get("cpu_sec", cpu.get("client"))
    if not moved or client is None or "server" not in cpu:
        return None
    return (client + cpu["server"]) / (moved / 1e9)


def cpu_per_gb(samples):
    out = []
    for pair, ours, base, bname in CPU_PAIRS:
        o = summary([v for (p, m, _), runs in samples.items()
                     if p == pair and m == ours
                     for v in map(cpu_s_per_gb, runs) if v is not None])
        b = summary([v for (p, m, _), runs in samples.items()
                     if p == pair and m == base
                     for v in map(cpu_s_per_gb, runs) if v is not None])
        out.append({"pair": pair, "metric": ours, "libndk": o,
                    "baseline": bname, "baseline_value": b,
                    "ratio": o["median"] / b["median"]
                    if o and b and b["median"] else None,
                    "paired": paired(samples, pair, (ours, cpu_s_per_gb),
                                      (base, cpu_s_per_gb))})
    return out


def syscalls(samples):
    """{metric: {"server": {...}, "client": {...}, "runs": n}} per
    message, each count the median of the runs."""
    out = {}
    for (p, m, _), runs in samples.items():
        if p != "syscalls" or not runs:
            continue
        d = {"runs": len(runs)}
        for side in ("server", "client"):
            keys = set().union(*(r[side].keys() for r in runs))
            d[side] = {k: statistics.median(r[side][k] for r in runs
                                            if k in r[side])
                       for k in keys}
        out[m[len("sys_"):]] = d
    return out


def cpu_table(res):
    rows = [r for r in res.get("cpu") or [] if r["libndk"]]
    if not rows:
        return []
    reps = res.get("meta", {}).get("reps")
    out = ["| 64 KiB, CPU-seconds per GB (client + server) | libndk: median "
           "(min-max) | Baseline: median (min-max) | Ratio | Paired ratio |",
           "|---|---|---|---|---|"]
    for r in rows:
        out.append("| %s%s | %s | %s: %s | %s | %s |" % (
            "veth: " if r["pair"].endswith("_veth") else "",
            r["metric"], cell(r["libndk"], reps), r["baseline"],
            cell(r["baseline_value"], reps),
            "%.2f" % r["ratio"] if r["ratio"] is not None else "n/a",
            paired_cell(r)))
    return out


def syscall_table(res):
    s = res.get("syscalls") or {}
    if not s:
        return []
    runs = max(d.get("runs", 1) for d in s.values())
    what = ("one run" if runs == 1 else "median of %d runs" % runs)
    out = ["| Program (%s under perf stat) | server: receive (empty) / " % what +
           "send / wait / all | client: receive (empty) / send / wait / all |",
           "|---|---|---|"]
    for m in [m + sfx for sfx in ("", "_veth")
              for m in ("write_bw", "lf_write_bw", "send_bw", "lf_msg_bw",
                        "read_bw", "lf_read_bw")]:
        if m not in s:
            continue
        cells = ["%.2f (%s) / %.2f / %.2f / %.2f" % (
            d["recv"], "%.2f" % d["empty"] if "empty" in d else "-",
            d["send"], d["wait"], d["total"])
            for d in (s[m]["server"], s[m]["client"])]
        base = m[:-len("_veth")] if m.endswith("_veth") else m
        name = ("libfabric tcp lf_bench " + base[3:]
                if base.startswith("lf_") else "ndkperf " + base)
        if base != m:
            name = "veth: " + name
        out.append("| %s | %s | %s |" % (name, cells[0], cells[1]))
    return out


SCALE_QPS = (1, 2, 4, 8)
SCALE_ROWS = [
    # (metric prefix, label, JSON key, unit)
    ("scale_write_bw", "64 KiB Write, polling", "mb_per_sec", "MB/s"),
    ("scale_write_bw_e", "64 KiB Write, CQ notifications (-e)",
     "mb_per_sec", "MB/s"),
    ("scale_msg_rate", "8 B Send message rate, polling", "msgs_per_sec",
     "M msg/s"),
    ("scale_msg_rate_e", "8 B Send message rate, CQ notifications (-e)",
     "msgs_per_sec", "M msg/s"),
]


def scaling(samples):
    """Aggregate rate per QP count, the ratio of its median to one QP's,
    and the client's voluntary context switches per request."""
    out = []
    for prefix, label, key, unit in SCALE_ROWS:
        row = {"metric": label, "unit": unit, "qps": {}}
        for q in SCALE_QPS:
            m = "%s_q%d" % (prefix, q)
            vals = values(samples, "scale", m, key)
            if unit.startswith("M "):
                vals = [v / 1e6 for v in vals]
            sw = [r["vol_switches"] / r["iters"]
                  for (p, mm, _), runs in samples.items()
                  if p == "scale" and mm == m
                  for r in runs if r.get("vol_switches") is not None
                  and r.get("iters")]
            row["qps"][str(q)] = {"rate": summary(vals),
                                  "switches_per_request":
                                      statistics.median(sw) if sw else None}
        one = row["qps"]["1"]["rate"]
        for q in SCALE_QPS:
            r = row["qps"][str(q)]
            r["vs_one"] = (r["rate"]["median"] / one["median"]
                           if r["rate"] and one and one["median"] else None)
        out.append(row)
    return out


def scaling_table(res):
    """The scaling table, as a list of lines (empty without data)."""
    rows = res.get("scaling") or []
    if not any(r["qps"]["1"]["rate"] for r in rows):
        return []
    reps = res.get("meta", {}).get("reps")
    out = ["| QPs at once | " + " | ".join(str(q) for q in SCALE_QPS) + " |",
           "|---" * (len(SCALE_QPS) + 1) + "|"]
    for r in rows:
        cells = []
        for q in SCALE_QPS:
            c = r["qps"][str(q)]
            text = cell(c["rate"], reps)
            if c["vs_one"] is not None and q != 1:
                text += ", %.2fx" % c["vs_one"]
            if c["switches_per_request"] is not None:
                text += ", %.3f sw" % c["switches_per_request"]
            cells.append(text)
        out.append("| %s (%s) | %s |" % (r["metric"], r["unit"],
                                          " | ".join(cells)))
    return out


def fmt(v):
    if v is None:
        return "n/a"
    if abs(v) >= 100:
        return "%.0f" % v
    return "%.2f" % v


def cell(s, reps):
    """median (min-max), with the count when some runs failed."""
    if not s:
        return "missing"
    text = "%s (%s-%s)" % (fmt(s["median"]), fmt(s["min"]), fmt(s["max"]))
    if reps and s["n"] < reps:
        text += " n=%d" % s["n"]
    return text


def paired_cell(r):
    return cell(r["paired"], 0) if r.get("paired") else "-"


def table(res):
    """The Markdown table of a results.json document, as a list of lines."""
    reps = res.get("meta", {}).get("reps")
    out = ["| Metric | libndk: median (min-max) | Baseline: median (min-max)"
           " | Ratio | Paired ratio | Target | Holds |",
           "|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        tgt = ("%s %.2f" % ("<=" if r["better"] == "lower" else ">=",
                            r["target"])
               if r["target"] is not None else "-")
        if r["missing"]:
            holds = "missing"
        elif r["holds"] is None:
            holds = "-"
        else:
            holds = "yes" if r["holds"] else "no"
            if not r["holds"] and r.get("limit"):
                holds += " (%s)" % r["limit"]
        label = r["metric"] if r["primary"] else r["metric"] + " *"
        out.append("| %s | %s | %s: %s | %s | %s | %s | %s |" % (
            label, cell(r["libndk"], reps), r["baseline"],
            cell(r["baseline_value"], reps),
            "%.2f" % r["ratio"] if r["ratio"] is not None else "n/a",
            paired_cell(r),
            tgt, holds))
    h = res.get("hold") or {}
    c, s = (h.get("client_bytes_per_connection"),
            h.get("server_bytes_per_connection"))
    if c is not None and s is not None:
        ok = "yes" if max(c, s) <= HOLD_TARGET_BYTES else "no"
        value = "%s / %s" % (fmt(c / 1024), fmt(s / 1024))
    else:
        ok, value = "missing", "missing"
    out.append("| %s connections held at once: memory per connection, "
               "client / server (KiB) | %s | - | - | - | <= %d KiB | %s |" % (
                   h.get("connections") or
                   res.get("meta", {}).get("hold_connections", "n/a"), value,
                   HOLD_TARGET_BYTES // 1024, ok))
    return out


def crc_speed(m):
    """' (IMPL, N GB/s over 64 KiB, M over 1448 bytes)' from crc_bench."""
    runs = m.get("crc") or []
    if not m.get("mpa_crc", True) or not runs:
        return ""
    return " (%s, %s)" % (runs[0].get("impl", "?"), ", ".join(
        "%.0f GB/s over %s" % (r.get("gb_per_sec", 0),
                               "64 KiB" if r.get("bytes") == 65536
                               else "%s bytes" % r.get("bytes"))
        for r in runs))


def caption(res):
    m = res.get("meta", {})
    return ("`%sREPS=%s bench/run` at commit %s, %s: kernel %s, %s CPUs, "
            "loopback, CRC %s%s, TCP congestion control %s, polling, the "
            "library %s. Ratios "
            "are of the medians of the two sides of a pair, run back to back "
            "in each repetition, or (rows marked sliced) at once, one side "
            "running at a time (bench/slicer): latency in slices of 5 ms, "
            "100,000 round trips a side; bandwidth in slices of 20 ms, "
            "60,000 messages a side until the first ends, its rate over the "
            "time it ran; a target holds only if the ratio of "
            "medians meets it in this run. The paired ratio is the ratio within "
            "each repetition, median (min-max); the Write mean against its "
            "own p50, two values of one run, has the median of its paired "
            "ratios as its ratio. Rows marked `*` are "
            "secondary (no target)." % (
                "BENCH_QUICK=1 " if m.get("quick") else "", m.get("reps"),
                m.get("commit"), m.get("date"), m.get("kernel"),
                m.get("cpus"), "on" if m.get("mpa_crc", True) else "off",
                crc_speed(m), m.get("tcp_cc", "not recorded"),
                {True: "profile-guided (bench/pgo)",
                 False: "a plain Release build"}.get(m.get("pgo"),
                                                     "a Release build")))


def main():
    raw, out = sys.argv[1], sys.argv[2]
    res = build(*load(raw))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(caption(res))
    print()
    print("\n".join(table(res)))
    for extra in (scaling_table(res), cpu_table(res), syscall_table(res)):
        if extra:
            print()
            print("\n".join(extra))
    plot(out, res["sweeps"])
    if res["missing"]:
        print("bench: rows missing: " + "; ".join(res["missing"]),
              file=sys.stderr)
        return MISSING_STATUS
    return 0


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
        try:
            subprocess.run(["gnuplot"], input="\n".join(cmds), text=True,
                           check=False)
        except OSError as e:
            print("bench: no plots: %s" % e, file=sys.stderr)

    series([("sweep_send_lat", "libndk send/recv (ndkperf send_lat)"),
            ("sweep_write_lat", "libndk RDMA write (ndkperf write_lat)"),
            ("sweep_tcp_poll_lat", "busy-poll TCP ping-pong (tcp_bench)"),
            ("sweep_tcp_lat", "blocking TCP ping-pong (tcp_bench)")],
           os.path.join(out, "latency.png"), "one-way latency p50 (usec)",
           "Latency against message size, loopback")
    series([("sweep_send_bw", "libndk send (ndkperf send_bw)"),
            ("sweep_write_bw", "libndk RDMA write (ndkperf write_bw)"),
            ("sweep_tcp_poll_bw", "busy-poll TCP stream (tcp_bench)"),
            ("sweep_lf_msg_bw", "libfabric tcp send (lf_bench msg_bw)"),
            ("sweep_lf_write_bw", "libfabric tcp RMA write (lf_bench)")],
           os.path.join(out, "bandwidth.png"), "MB/s",
           "Bandwidth against message size, loopback")


if __name__ == "__main__":
    sys.exit(main())
