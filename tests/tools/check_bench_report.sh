#!/usr/bin/env bash
# Tests of bench/report.py, through results.json and its table:
#
#   check_bench_report.sh REPORT
#
# From a raw.jsonl of made-up samples: the ratio of the medians decides a
# target, the paired ratio is the median of the ratios within each
# repetition, the Write mean against its own p50 (two values of one run)
# is decided by the median of its per-run ratios, and the 4-QP row's
# target is named a device limit on a machine with fewer CPUs than it
# needs, and not on one with enough.
report=$1
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# raw CPUS: three repetitions of the 4-QP pair, of the Write pair
# against libfabric and of the back-to-back Write latency, as bench/run
# writes them. The latency runs' means and p50s (usec): one run with a
# stall (8.0 against 3.5), then one fast and one slow: the median mean
# (5.6) and the median p50 (3.6) come from different runs.
raw() {
	local rep q4 one ndk lf
	local mean=(0 8.0 3.7 5.6) p50=(0 3.5 3.6 5.4)
	printf '{"meta":{"commit":"test","reps":3,"quick":false,"cpus":%d}}\n' "$1"
	for rep in 1 2 3; do
		q4=$((4000 + rep * 100)) one=$((4000 + rep * 10))
		ndk=$((3000 + rep * 100)) lf=$((2000 + rep * 100))
		printf '{"pair":"write_bw_qps","rep":%d,"metric":"write_bw_q4","size":65536,"data":{"results":[{"mb_per_sec":%d}]}}\n' "$rep" "$q4"
		printf '{"pair":"write_bw_qps","rep":%d,"metric":"write_bw","size":65536,"data":{"results":[{"mb_per_sec":%d}]}}\n' "$rep" "$one"
		printf '{"pair":"write_bw_lf","rep":%d,"metric":"write_bw","size":65536,"data":{"results":[{"mb_per_sec":%d}]}}\n' "$rep" "$ndk"
		printf '{"pair":"write_bw_lf","rep":%d,"metric":"lf_write_bw","size":65536,"data":{"mb_per_sec":%d}}\n' "$rep" "$lf"
		printf '{"pair":"write_lat_b2b","rep":%d,"metric":"write_lat","size":8,"data":{"results":[{"mean_usec":%s,"p50_usec":%s}]}}\n' "$rep" "${mean[rep]}" "${p50[rep]}"
	done
}

for cpus in 2 8; do
	mkdir -p "$tmp/$cpus"
	raw "$cpus" >"$tmp/$cpus/raw.jsonl"
	# Rows of other pairs are missing here: exit status 3 says so.
	rc=0
	python3 "$report" "$tmp/$cpus/raw.jsonl" "$tmp/$cpus" >"$tmp/out" \
		2>"$tmp/err" || rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "cpus $cpus: exit status $rc"
	python3 - "$tmp/$cpus/results.json" "$cpus" <<'PY' || fail "cpus $cpus"
import json, sys
res = json.load(open(sys.argv[1]))
cpus = int(sys.argv[2])
rows = {r["pair"]: r for r in res["rows"]}
q, w = rows["write_bw_qps"], rows["write_bw_lf"]
assert abs(q["ratio"] - 4200 / 4020) < 1e-9, q["ratio"]
assert q["holds"] is False, q
assert abs(w["ratio"] - 3200 / 2200) < 1e-9, w["ratio"]
assert abs(w["paired"]["median"] - 3200 / 2200) < 1e-9, w["paired"]
assert w["holds"] is True and w.get("limit") is None, w
m = next(r for r in res["rows"] if r["pair"] == "write_lat_b2b"
         and r["metric"].startswith("8 B RDMA Write one-way mean"))
assert abs(m["ratio"] - 5.6 / 5.4) < 1e-9, m["ratio"]
assert abs(m["paired"]["median"] - 5.6 / 5.4) < 1e-9, m["paired"]
assert m["holds"] is True, m
if cpus < 4:
    assert q["limit"] == "device limit: 2 CPUs, the target needs 4", q
else:
    assert q.get("limit") is None, q
PY
	line=$(grep -F '| 4 QPs aggregate' "$tmp/out") ||
		fail "cpus $cpus: no 4-QP row in the table"
	if [ "$cpus" = 2 ]; then
		grep -qF '| no (device limit: 2 CPUs, the target needs 4) |' \
			<<<"$line" || fail "cpus 2: $line"
	else
		grep -qE '\| no \|$' <<<"$line" || fail "cpus 8: $line"
	fi
done
echo "bench/report.py: ok"
