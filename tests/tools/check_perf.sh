#!/usr/bin/env bash
# Tests of ndkping and ndkperf (tools/perf) on loopback, through their
# output only:
#
#   check_perf.sh NDKPING NDKPERF
#
# ndkping: every round trip answered, the negotiated read limits and the
# server's private data printed, exit 0; a wildcard server (-b 0.0.0.0)
# serving 127.0.0.1 and the machine's other address; SIGINT and SIGTERM.
# ndkperf: every test completes with -j, and its JSON has the fi_pingpong
# columns with sane values (bytes moved = bytes x iterations, a positive
# rate) and, for latency, min to p99.9 in order; polling and event mode,
# several QPs, DEFER bursts, hold's memory per connection, -D with -i
# interval reports, -H, --bidir, the human table, SIGINT, exit statuses.
ndkping=$1
ndkperf=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# Under TSan: the write-latency spin on placed memory is by design. The
# largest history keeps the stacks the suppressions match by name.
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }history_size=7 suppressions=$(dirname "$0")/tsan.supp"

# --- ndkping ---------------------------------------------------------
port=$(free_port)
# A wildcard server (docs/tools.md, Servers): one adapter per interface.
"$ndkping" -s -b 0.0.0.0 -p "$port" >"$tmp/ping-server.log" 2>&1 &
ping_server=$!
pids+=($ping_server)
for _ in $(seq 100); do
	grep -q "^ndkping: listening on 0.0.0.0:$port (" "$tmp/ping-server.log" &&
		break
	sleep 0.1
done
grep -q "^ndkping: listening on 0.0.0.0:$port (" "$tmp/ping-server.log" ||
	fail "ndkping -s -b 0.0.0.0: no listening line"
"$ndkping" -n 5 -i 0.001 -S 100 "127.0.0.1:$port" >"$tmp/ping.log" 2>&1 ||
	fail "ndkping exited $?"
grep -q "own read limits requested: IRD [0-9]* ORD [0-9]*" "$tmp/ping.log" ||
	fail "ndkping: no read limits"
grep -q 'peer read limits IRD [0-9]* ORD [0-9]*; private data 14 bytes "ndkping server"' \
	"$tmp/ping.log" || fail "ndkping: no server private data"
[ "$(grep -c '^100 bytes from 127.0.0.1' "$tmp/ping.log")" = 5 ] ||
	fail "ndkping: not 5 replies"
grep -q "5 sent, 5 received, 0% loss" "$tmp/ping.log" ||
	fail "ndkping: loss"
closed_want=1
# The same server through the machine's other address, if it has one.
other=$(ip -4 -o addr show up scope global 2>/dev/null |
	awk '{ sub("/.*", "", $4); print $4; exit }')
if [ -n "$other" ]; then
	"$ndkping" -n 2 -i 0 -j "$other:$port" >"$tmp/ping-other.json" \
		2>"$tmp/ping-other.log" || fail "ndkping to $other: exit $?"
	python3 - "$tmp/ping-other.json" "$other" <<'PY' || fail "ndkping -j to $other"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "ndkping" and d["target"].startswith(sys.argv[2] + ":"), d
assert d["interface"] != "lo", d
assert (d["sent"], d["received"], d["size"]) == (2, 2, 8), d
assert 0 < d["rtt_min_usec"] <= d["rtt_mean_usec"] <= d["rtt_max_usec"], d
PY
	closed_want=$((closed_want + 1))
	echo "ok: ndkping -s -b 0.0.0.0 served 127.0.0.1 and $other"
else
	echo "(no global IPv4 address: the wildcard server was tried on lo only)"
fi
# The IPv6 wildcard, where the machine has ::1.
if ip -6 -o addr show dev lo 2>/dev/null | grep -q ' ::1/'; then
	port6=$(free_port)
	"$ndkping" -s -b :: -p "$port6" >"$tmp/ping6-server.log" 2>&1 &
	ping6=$!
	pids+=($ping6)
	wait_port "$port6"
	"$ndkping" -n 1 -i 0 "[::1]:$port6" >"$tmp/ping6.log" 2>&1 ||
		fail "ndkping -s -b :: to [::1]: exit $?"
	kill -TERM "$ping6"
	wait "$ping6" || fail "ndkping -s -b :: ended by SIGTERM: exit $?"
	echo "ok: ndkping -s -b :: served [::1]"
fi
# --verify: every echo checked against the pattern sent.
"$ndkping" --verify -n 3 -i 0 -S 4097 "127.0.0.1:$port" >"$tmp/ping-v.log" 2>&1 ||
	fail "ndkping --verify exited $?"
grep -q "^verify: 3 of 3 echoes byte-exact" "$tmp/ping-v.log" ||
	fail "ndkping --verify: no verified echoes"
# The server serves one client at a time: the next one, after a client
# that left gracefully and one that was killed, is served too.
"$ndkping" -n 0 -i 0.01 "127.0.0.1:$port" >/dev/null 2>&1 &
victim=$!
sleep 1
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
timeout 20 "$ndkping" -n 2 -i 0.001 "127.0.0.1:$port" >"$tmp/ping.log" 2>&1 ||
	fail "ndkping after a killed client: exit $?"
grep -q "2 sent, 2 received, 0% loss" "$tmp/ping.log" ||
	fail "ndkping after a killed client: loss"
closed_want=$((closed_want + 3))
closed() { grep -c '^connection closed (STATUS_SUCCESS)' "$tmp/ping-server.log"; }
for _ in $(seq 100); do
	[ "$(closed)" = $closed_want ] && break
	sleep 0.1
done
[ "$(closed)" = $closed_want ] ||
	fail "ndkping server: not $closed_want connections closed"
# A client interrupted mid-run prints its summary and exits 0.
"$ndkping" -n 0 -i 0.01 "127.0.0.1:$port" >"$tmp/ping-int.log" 2>&1 &
victim=$!
sleep 0.5
kill -INT "$victim"
wait "$victim" || fail "ndkping ended by SIGINT: exit $?"
grep -q "^[1-9][0-9]* sent, [1-9][0-9]* received, 0% loss" "$tmp/ping-int.log" ||
	fail "ndkping ended by SIGINT: no summary"
# Nothing listens: could not connect is status 3.
rc=0
"$ndkping" -n 1 "127.0.0.1:$(free_port)" >/dev/null 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "ndkping to a closed port: exit $rc, not 3"
# SIGTERM ends the server with its summary and status 0.
kill -TERM "$ping_server"
wait "$ping_server" || fail "ndkping server ended by SIGTERM: exit $?"
grep -q "^ndkping: served [0-9]* connections" "$tmp/ping-server.log" ||
	fail "ndkping server: no summary"
echo "ok: ndkping"

# --- ndkperf ---------------------------------------------------------
port=$(free_port)
"$ndkperf" -s -p "$port" >"$tmp/perf-server.log" 2>&1 &
server=$!
pids+=($server)
wait_port "$port"

# run NAME ARGS...: one client run with -j, checked.
run() {
	local name=$1
	shift
	"$ndkperf" -j "$@" "127.0.0.1:$port" >"$tmp/$name.json" \
		2>"$tmp/$name.log" || fail "ndkperf $*: exit $?"
	python3 - "$tmp/$name.json" "$name" <<'PY' || fail "ndkperf $name: bad JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
name = sys.argv[2]
assert doc["tool"] == "ndkperf", doc
assert doc["results"], doc
lat = doc["test"] in ("send_lat", "write_lat", "read_lat", "conn")
for r in doc["results"]:
    for k in ("bytes", "iters", "total_bytes", "seconds", "mb_per_sec",
              "usec_per_xfer", "mxfers_per_sec"):
        assert k in r, (k, r)
    assert r["iters"] > 0 and r["seconds"] > 0, r
    assert r["usec_per_xfer"] > 0 and r["mxfers_per_sec"] > 0, r
    if lat:
        # Every latency test reports the distribution (ndkperf(1)).
        keys = ("min_usec", "p50_usec", "p90_usec", "p99_usec",
                "p99_9_usec", "max_usec")
        v = [r[k] for k in keys]
        assert all(x > 0 for x in v) and v == sorted(v), r
        assert r["min_usec"] <= r["mean_usec"] <= r["max_usec"], r
        assert r["stdev_usec"] >= 0, r
    else:
        # Bandwidth rows carry no latency columns.
        assert "p50_usec" not in r, r
    if doc["test"] not in ("conn", "hold"):
        assert r["total_bytes"] == r["bytes"] * r["iters"], r
        assert r["bytes"] == 0 or r["mb_per_sec"] > 0, r
        assert r["cpu_sec"] >= 0 and r["cpu_percent"] >= 0, r
        assert r["server_cpu_percent"] >= 0, r
        # The timed run on CLOCK_MONOTONIC, for bench/slicer.
        wall = (r["mono_end_ns"] - r["mono_start_ns"]) / 1e9
        assert abs(wall - r["seconds"]) < 2e-6, r
PY
	echo "ok: ndkperf $name"
}

# write_lat spins on the last byte: a 0-byte run is a usage error.
rc=0
"$ndkperf" -t write_lat -S 0 "127.0.0.1:$port" >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "ndkperf -t write_lat -S 0: exit $rc, not 2"
for t in send_lat write_lat read_lat msg_rate; do
	run "$t" -t "$t" -n 300
done
for t in send_bw write_bw read_bw; do
	run "$t" -t "$t" -n 100
done
run send_lat_sizes -t send_lat -S 4m -n 5

# NDK_BENCH_READY_STOP: the client stops itself once connected, before
# its clock starts, and runs on when continued.
NDK_BENCH_READY_STOP=1 "$ndkperf" -j -t write_bw -n 100 "127.0.0.1:$port" \
	>"$tmp/ready.json" 2>"$tmp/ready.log" &
ready=$!
pids+=("$ready")
for _ in $(seq 100); do
	[ "$(awk '{ print $3 }' "/proc/$ready/stat" 2>/dev/null)" = T ] && break
	sleep 0.1
done
[ "$(awk '{ print $3 }' "/proc/$ready/stat" 2>/dev/null)" = T ] ||
	fail "NDK_BENCH_READY_STOP: the client did not stop itself"
t_stop=$(python3 -c 'import time; print(time.monotonic_ns())')
sleep 0.3
kill -CONT "$ready"
wait "$ready" || fail "NDK_BENCH_READY_STOP: exit $? after SIGCONT"
python3 - "$tmp/ready.json" "$t_stop" <<'PY' || fail "NDK_BENCH_READY_STOP: its clock ran while stopped"
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["iters"] == 100 and r["mono_start_ns"] > int(sys.argv[2]) + 2e8, r
PY
echo "ok: ndkperf NDK_BENCH_READY_STOP"
run write_lat_mem_only -t write_lat -m -n 300
run write_lat_events -t write_lat -e -n 300
run write_bw_events -t write_bw -e -q 2 -n 100
run write_bw_defer -t write_bw -B -n 100
run send_lat_inline -t send_lat --inline -n 300
run send_bw_inline -t send_bw --inline -S 64 -n 1000
run msg_rate_defer -t msg_rate -B -n 1000
# --verify: the data checked on both sides; the server says so per session.
for t in send_lat write_lat read_lat msg_rate send_bw write_bw read_bw; do
	run "verify_$t" --verify -t "$t" -S 4097 -n 50
	# The server's line may follow the client's exit by a moment.
	for _ in $(seq 50); do
		grep -q "^ndkperf: verify: $t 4097 B: [0-9]* checks, all byte-exact" \
			"$tmp/perf-server.log" && break
		sleep 0.1
	done
	grep -q "^ndkperf: verify: $t 4097 B: [0-9]* checks, all byte-exact" \
		"$tmp/perf-server.log" || fail "ndkperf --verify $t: the server did not check"
done
run conn -t conn -n 50 -T 2
run hold -t hold -n 50 -D 1
python3 - "$tmp/conn.json" <<'PY' || fail "ndkperf conn: wrong count"
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["iters"] == 50 and r["bytes"] == 64, r
PY
python3 - "$tmp/hold.json" <<'PY' || fail "ndkperf hold: no memory per connection"
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["iters"] == 50 and 0 < r["bytes_per_connection"] < 1 << 20, r
PY

# Duration, interval reports and histogram: a latency run of -D 1 with a
# report every 0.25 s covers about a second in four or five intervals.
run duration_lat -t send_lat -D 1 -i 0.25 -H
python3 - "$tmp/duration_lat.json" <<'PY' || fail "ndkperf -D -i -H"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["duration"] == 1.0, doc
r = doc["results"][0]
assert 0.9 < r["seconds"] < 3, r
iv = r["intervals"]
assert 4 <= len(iv) <= 6, iv
assert sum(i["iters"] for i in iv) == r["iters"], (iv, r["iters"])
assert all(i["p50_usec"] > 0 and i["end"] > i["start"] for i in iv), iv
h = r["histogram"]
assert sum(b["count"] for b in h) == r["samples"], (h, r["samples"])
assert all(b["lo_usec"] < b["hi_usec"] for b in h), h
PY
echo "ok: ndkperf -D 1 -i 0.25 -H"
run duration_bw -t write_bw -D 0.5 -i 0.2
python3 - "$tmp/duration_bw.json" <<'PY' || fail "ndkperf -D -i, bandwidth"
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert 0.4 < r["seconds"] < 3, r
assert sum(i["iters"] for i in r["intervals"]) == r["iters"], r
assert all(i["mb_per_sec"] > 0 for i in r["intervals"][:-1]), r
PY
echo "ok: ndkperf -D 0.5 -i 0.2, bandwidth"
# Both ways at once: the server sends as much as the client.
for t in send_bw write_bw read_bw; do
	run "bidir_$t" -t "$t" --bidir -n 200 --verify -S 4097
	python3 - "$tmp/bidir_$t.json" <<'PY' || fail "ndkperf --bidir"
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["tx_iters"] == r["rx_iters"] == 200 and r["iters"] == 400, r
PY
done
echo "ok: ndkperf --bidir"
# The human table: sizes as given, the latency columns, CPU per side.
"$ndkperf" -t send_bw -S 64k -n 100 "127.0.0.1:$port" >"$tmp/human.log" 2>&1 ||
	fail "ndkperf human output: exit $?"
grep -qE '^bytes +iters +seconds +MB/s +Gb/s +Mmsg/s +usec/msg +cpu%cli +cpu%srv$' \
	"$tmp/human.log" || fail "ndkperf: no bandwidth header"
grep -qE '^64k +100 ' "$tmp/human.log" || fail "ndkperf: 64k not printed as 64k"
"$ndkperf" -t read_lat -n 100 "127.0.0.1:$port" >"$tmp/human.log" 2>&1 ||
	fail "ndkperf human output: exit $?"
grep -qE '^bytes +iters +min +p50 +p90 +p99 +p99.9 +max +mean +stdev +cpu%cli +cpu%srv$' \
	"$tmp/human.log" || fail "ndkperf: no latency header"
grep -qE '^8 +100( +[0-9]+\.[0-9]+){10}$' "$tmp/human.log" ||
	fail "ndkperf: no latency row"
# A client interrupted mid-run reports what it measured and exits 0.
"$ndkperf" -j -t send_bw -n 0 "127.0.0.1:$port" >"$tmp/int.json" 2>"$tmp/int.log" &
victim=$!
sleep 1
kill -INT "$victim"
wait "$victim" || fail "ndkperf ended by SIGINT: exit $?"
python3 - "$tmp/int.json" <<'PY' || fail "ndkperf ended by SIGINT: no result"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["interrupted"] and doc["results"][0]["iters"] > 0, doc
PY
echo "ok: ndkperf SIGINT"
# Usage errors exit 2, a closed port 3.
for a in "-x" "-t nosuch" "-S 5m" "-n 1 -D 1" "--bidir -t send_lat" "-H -t send_bw" "-V" "-s 64k"; do
	rc=0
	# shellcheck disable=SC2086
	"$ndkperf" $a "127.0.0.1:$port" >/dev/null 2>&1 || rc=$?
	[ "$rc" = 2 ] || fail "ndkperf $a: exit $rc, not 2"
done
rc=0
"$ndkperf" -n 10 "127.0.0.1:$(free_port)" >/dev/null 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "ndkperf to a closed port: exit $rc, not 3"

# A client killed mid-run: the server ends that session (its disconnect
# event), goes idle (no thread left polling a dead QP, no engine spinning
# on the reset socket) and serves the next client.
"$ndkperf" -t send_lat -n 10000000 "127.0.0.1:$port" >"$tmp/victim.log" 2>&1 &
victim=$!
for _ in $(seq 100); do
	ss -Htnp state established "( dport = :$port )" |
		grep -q "pid=$victim," && break
	sleep 0.1
done
sleep 1 # past the MPA handshake, into the run
kill -9 "$victim" 2>/dev/null || fail "ndkperf client ended before it was killed"
wait "$victim" 2>/dev/null || true
for _ in $(seq 100); do
	grep -q "send_lat session ended early" "$tmp/perf-server.log" && break
	sleep 0.1
done
grep -q "send_lat session ended early: the client is gone" \
	"$tmp/perf-server.log" || fail "ndkperf server: killed client's session lives on"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
t0=$(cpu_ticks "$server")
sleep 1
t1=$(cpu_ticks "$server")
hz=$(getconf CLK_TCK)
# A thread spinning on a dead QP or socket takes about hz ticks a second.
[ $((t1 - t0)) -le $((hz * 2 / 5)) ] ||
	fail "ndkperf server: $((t1 - t0)) ticks of CPU in 1 s after its client died"
run after_kill -t send_lat -n 100
# SIGTERM: the server stops with its summary and status 0.
kill -TERM "$server"
wait "$server" || fail "ndkperf server ended by SIGTERM: exit $?"
grep -q "^ndkperf: served [0-9]* sessions" "$tmp/perf-server.log" ||
	fail "ndkperf server: no summary"
echo "ok: all"
