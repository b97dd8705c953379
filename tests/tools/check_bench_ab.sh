#!/usr/bin/env bash
# Tests of bench/ab, through its output and exit status:
#
#   check_bench_ab.sh AB BUILD
#
# --help and --version; usage errors exit 2; a bandwidth and a latency
# comparison of two configurations of BUILD's ndkperf, as a table and as
# JSON (every run a positive figure, medians within min-max); a client
# that cannot reach its server (something else on the port) exits 1 and
# names the round. Pinned when there are two CPUs. --interleave: a sliced
# latency comparison, and bench/slicer itself (one side runs at a time,
# in slices; a failing client fails it).
ab=$1
build=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

out=$("$ab" --help) || fail "--help exit status $?"
grep -q '^usage: bench/ab' <<<"$out" || fail "--help: $out"
out=$("$ab" --version) || fail "--version exit status $?"
grep -Eq '^ab \(libndk\) [0-9.]+, NDKPI 2\.1$' <<<"$out" ||
	fail "--version: $out"

for args in "" "$build" "-n x $build $build" "--rounds 0 $build $build" \
	"-p 70000 $build $build" "$build /nonexistent" "--bogus $build $build" \
	"--lf -t send_lat $build $build" "--interleave $build $build" \
	"--interleave -t send_lat -i x $build $build" \
	"--interleave --lf -t send_lat $build $build"; do
	rc=0
	# shellcheck disable=SC2086 # the words are the arguments
	"$ab" $args >/dev/null 2>&1 || rc=$?
	[ "$rc" = 2 ] || fail "'bench/ab $args': exit status $rc, not 2"
done

pin=
[ "$(nproc)" -ge 2 ] && pin=--pin
port=$(free_port)
out=$("$ab" $pin -p "$port" --rounds 2 -n 300 "$build" \
	"$build:NDK_MPA_CRC=0,NDK_LOG=error") || fail "write_bw: exit status $?"
grep -Eq '^round  2  A +[0-9.]+  B +[0-9.]+  B/A [0-9.]+$' <<<"$out" ||
	fail "write_bw: no second round: $out"
grep -Eq '^B/A +median [0-9.]+ \([0-9.]+-[0-9.]+\)$' <<<"$out" ||
	fail "write_bw: no median of B/A: $out"

port=$(free_port)
out=$("$ab" -j -t send_lat -p "$port" --rounds 3 -n 300 "$build" "$build") ||
	fail "send_lat: exit status $?"
python3 - "$out" <<'EOF' || fail "send_lat JSON: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["tool"] == "ab" and d["test"] == "send_lat", d
assert d["metric"] == "p50_usec" and d["rounds"] == 3, d
assert len(d["runs"]) == 3 and all(len(r) == 2 and min(r) > 0 for r in d["runs"]), d
for k in ("A", "B", "B/A"):
    s = d[k]
    assert 0 < s["min"] <= s["median"] <= s["max"], (k, s)
EOF

port=$(free_port)
out=$("$ab" --interleave -t write_lat -p "$port" --rounds 2 -n 2000 "$build" \
	"$build") || fail "--interleave: exit status $?"
grep -Eq '^round  2  A +[0-9.]+  B +[0-9.]+  B/A [0-9.]+$' <<<"$out" ||
	fail "--interleave: no second round: $out"

# bench/slicer: two clients that record the time as fast as they can.
# Sliced, the merged record switches between them once a slice, not once
# a sample; both finish and exit 0. The "servers" are two sleepers.
slicer=$tmp/slicer
cc -O2 -o "$slicer" "$(dirname "$ab")/slicer.c" || fail "slicer did not build"
sleep 30 &
s1=$!
sleep 30 &
s2=$!
pids+=("$s1" "$s2")
rec='import time, sys
t0 = time.monotonic(); v = []
while time.monotonic() - t0 < 0.3:
    v.append(time.monotonic())
print("\n".join(map(repr, v)))'
"$slicer" -i 0.01 "$s1" "$s2" "$tmp/a" "$tmp/b" -- python3 -c "$rec" -- \
	python3 -c "$rec" || fail "slicer: exit status $?"
python3 - "$tmp/a" "$tmp/b" <<'EOF' || fail "slicer did not slice"
import sys
a = [(float(x), 0) for x in open(sys.argv[1])]
b = [(float(x), 1) for x in open(sys.argv[2])]
m = sorted(a + b)
switches = sum(1 for i in range(1, len(m)) if m[i][1] != m[i - 1][1])
assert len(a) > 1000 and len(b) > 1000, (len(a), len(b))
# 0.3 s of each in 10 ms slices: some 60 switches; unsliced, thousands.
assert 4 <= switches <= 200, switches
EOF
# --ready --together -r, as for a rate: A sets up slowly (0.2 s) and B at
# once, B would run forever and A 0.3 s. Both timed parts must start
# together (after both stopped themselves) and end together (B stopped by
# SIGINT when A exits), each side running about half of that stretch.
cli='import os, signal, sys, time
if sys.argv[1] == "slow":
    time.sleep(0.2)
if os.environ.get("NDK_BENCH_READY_STOP"):
    os.kill(os.getpid(), signal.SIGSTOP)
t0 = t = time.monotonic_ns()
try:
    while t - t0 < float(sys.argv[2]) * 1e9:
        t = time.monotonic_ns()
except KeyboardInterrupt:
    pass
print(t0, t)'
"$slicer" -i 0.01 --ready --together -r "$tmp/runs" "$s1" "$s2" "$tmp/a" \
	"$tmp/b" -- python3 -c "$cli" slow 0.3 -- python3 -c "$cli" fast 30 ||
	fail "slicer --ready --together: exit status $?"
python3 - "$tmp/a" "$tmp/b" "$tmp/runs" <<'EOF' || fail "slicer --ready --together -r: wrong"
import sys
(a0, a1), (b0, b1) = [map(int, open(f).read().split()) for f in sys.argv[1:3]]
assert abs(a0 - b0) < 50e6 and abs(a1 - b1) < 50e6, (a0, a1, b0, b1)
ran = {"A": 0, "B": 0}
for line in open(sys.argv[3]):
    side, x, y = line.split()
    lo, hi = (a0, a1) if side == "A" else (b0, b1)
    ran[side] += max(0, min(int(y), hi) - max(int(x), lo))
for side, (lo, hi) in (("A", (a0, a1)), ("B", (b0, b1))):
    assert 0.3 < ran[side] / (hi - lo) < 0.7, (side, ran, lo, hi)
EOF
rc=0
"$slicer" -i 0.01 "$s1" "$s2" "$tmp/a" "$tmp/b" -- true -- false || rc=$?
[ "$rc" = 1 ] || fail "slicer: a failing client: exit status $rc, not 1"
kill "$s1" "$s2" 2>/dev/null || true

# Something else on the port, which closes what it accepts: the client
# reaches no ndkperf server.
port=$(free_port)
python3 -c 'import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
while True:
    s.accept()[0].close()' "$port" &
squatter=$!
pids+=("$squatter")
wait_port "$port"
rc=0
err=$("$ab" -p "$port" --rounds 1 -n 300 "$build" "$build" 2>&1 >/dev/null) ||
	rc=$?
kill "$squatter" 2>/dev/null
wait "$squatter" 2>/dev/null || true
[ "$rc" = 1 ] || fail "port taken: exit status $rc, not 1 ($err)"
grep -q '^bench/ab: round 1: A: ' <<<"$err" || fail "port taken: $err"

echo "bench/ab: ok"
