#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/zerocopy.sh: MSG_ZEROCOPY against plain send() for a one-way
# stream of large messages, over a veth pair between two network
# namespaces (loopback always copies, so it cannot show a gain) and, for
# reference, over loopback. Alternates the two modes in every repetition;
# prints one line per run and a median summary. Needs root (ip netns).
#
# Environment: REPS (default 5), SIZES (default "65536 1048576"),
# ITERS (messages per run, default 20000 for 64 KiB, scaled by size).
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${REPS:-5}
SIZES=${SIZES:-65536 1048576}
BIN=$(mktemp -d)/zc_bench
A=ndkzc-a.$$
B=ndkzc-b.$$

cc -O2 -Wall -o "$BIN" "$ROOT/bench/zc_bench.c" || exit 1
cleanup() {
	ip netns pids "$B" 2>/dev/null | xargs -r kill 2>/dev/null
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	[ -n "${LOPID:-}" ] && kill "$LOPID" 2>/dev/null
	rm -rf "$(dirname "$BIN")"
}
trap cleanup EXIT

ip netns add "$A" && ip netns add "$B" || exit 1
ip link add zc$$a type veth peer name zc$$b || exit 1
ip link set zc$$a netns "$A"
ip link set zc$$b netns "$B"
ip -n "$A" addr add 10.251.0.1/24 dev zc$$a
ip -n "$B" addr add 10.251.0.2/24 dev zc$$b
for n in "$A" "$B"; do ip -n "$n" link set lo up; done
ip -n "$A" link set zc$$a up
ip -n "$B" link set zc$$b up

PORT=31999
ip netns exec "$B" "$BIN" server $PORT &
"$BIN" server $((PORT + 1)) &
LOPID=$!
sleep 0.5

run() { # WHERE SIZE ZC
	local iters=$((20000 * 65536 / $2))
	if [ "$1" = veth ]; then
		ip netns exec "$A" "$BIN" client 10.251.0.2 $PORT "$2" \
			"$iters" "$3"
	else
		"$BIN" client 127.0.0.1 $((PORT + 1)) "$2" "$iters" "$3"
	fi
}

OUT=$(mktemp)
for rep in $(seq "$REPS"); do
	for where in veth loopback; do
		for size in $SIZES; do
			if [ $((rep % 2)) = 1 ]; then order="0 1"; else order="1 0"; fi
			for zc in $order; do
				line=$(run "$where" "$size" "$zc")
				echo "$where $line" | tee -a "$OUT"
			done
		done
	done
done
python3 - "$OUT" <<'PY'
import json, statistics, sys, collections
d = collections.defaultdict(list)
cop = collections.defaultdict(list)
for l in open(sys.argv[1]):
    where, js = l.split(" ", 1)
    r = json.loads(js)
    d[(where, r["bytes"], r["test"])].append(r["mb_per_sec"])
    if r["zc_sends"]:
        cop[(where, r["bytes"])].append(r["zc_copied"] / r["zc_sends"])
print("| path | size | copy MB/s median (min-max) | MSG_ZEROCOPY MB/s median (min-max) | zc/copy | sends reported copied |")
print("|---|---|---|---|---|---|")
for (where, size) in sorted({(k[0], k[1]) for k in d}):
    c, z = d[(where, size, "copy")], d[(where, size, "zerocopy")]
    print(f"| {where} | {size} | {statistics.median(c):.0f} ({min(c):.0f}-{max(c):.0f}) | "
          f"{statistics.median(z):.0f} ({min(z):.0f}-{max(z):.0f}) | "
          f"{statistics.median(z) / statistics.median(c):.2f} | "
          f"{100 * statistics.median(cop[(where, size)]):.0f}% |")
PY
rm -f "$OUT"
