#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Soak: one ndkstress client against one server, between two network
# namespaces, for DURATION seconds while a new random fault (none, loss,
# duplicates, corruption past the TCP checksum, a link flap, a burst of
# resets) takes over every FAULT_S seconds. Every SAMPLE_S seconds the RSS
# and descriptor count of both processes go to soak.csv. It fails if
# ndkstress reports a wrong byte or a request not completed exactly once,
# if the server is not back to its first sample's descriptors and memory
# (within RSS_SLACK_KIB) once the client is gone, or if the client's RSS
# grows between the middle and the last third of the run.
#
# usage: tests/reliability/soak.sh BUILD_DIR [DURATION] [OUT_DIR]
#   DURATION seconds (default 1800: 30 minutes; CI runs 60).
#   OUT_DIR gets soak.csv and the client's summary (default: a temp dir,
#   printed).
set -uo pipefail

BUILD=${1:?usage: soak.sh BUILD_DIR [DURATION] [OUT_DIR]}
DURATION=${2:-1800}
OUT=${3:-}
PROG=soak.sh
STRESS=$BUILD/tools/perf/ndkstress
SAMPLE_S=${SAMPLE_S:-10}
FAULT_S=${FAULT_S:-10}
RSS_SLACK_KIB=${RSS_SLACK_KIB:-65536}
[ "$DURATION" -lt 120 ] && SAMPLE_S=5 FAULT_S=5
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
[ -n "$OUT" ] || OUT=$(mktemp -d)
mkdir -p "$OUT"

# The faults a random one is drawn from (lib.sh's fault_apply);
# SOAK_FAULTS="corrupt none" narrows them.
read -r -a FAULTS <<<"${SOAK_FAULTS:-none loss dup corrupt flap resets}"

sample() { # T: one row of soak.csv
	local t=$1 cpid
	cpid=$(pgrep -f "^$STRESS -j -D $DURATION" | head -1)
	printf '%s,%s,%s,%s,%s\n' "$t" \
		"$(awk '/^VmRSS/ {print $2}' /proc/$SRV/status 2>/dev/null)" \
		"$(ls /proc/$SRV/fd 2>/dev/null | wc -l)" \
		"$(awk '/^VmRSS/ {print $2}' /proc/"$cpid"/status 2>/dev/null)" \
		"$(ls /proc/"$cpid"/fd 2>/dev/null | wc -l)" >>"$OUT/soak.csv"
}

# Connections reset by faults leave the server's side half-open until its
# keepalive notices (10 s here), so its descriptors come back quickly.
PEER_TIMEOUT=10000 server_start
echo "t_s,server_rss_kib,server_fds,client_rss_kib,client_fds" >"$OUT/soak.csv"
ip netns exec "$NSA" env NDK_PEER_TIMEOUT_MS=10000 \
	timeout $((DURATION + 120)) "$STRESS" -j -D "$DURATION" $ADDR_B \
	>"$OUT/client.json" 2>"$OUT/client.log" &
cli=$!
t0=$(date +%s)
next_fault=0
next_sample=0
while kill -0 "$cli" 2>/dev/null; do
	now=$(($(date +%s) - t0))
	if [ "$now" -ge "$next_sample" ]; then
		sample "$now"
		next_sample=$((next_sample + SAMPLE_S))
	fi
	if [ "$now" -ge "$next_fault" ] && [ "$now" -lt $((DURATION - FAULT_S)) ]; then
		f=${FAULTS[$((RANDOM % ${#FAULTS[@]}))]}
		echo "$now s: $f" >>"$OUT/faults.log"
		fault_apply "$f"
		next_fault=$((now + FAULT_S))
	elif [ "$now" -ge $((DURATION - FAULT_S)) ]; then
		# The last stretch is clean: the run ends on a working link.
		faults_clear
	fi
	sleep 1
done
wait "$cli"
rc=$?
faults_clear
# The server after the client is gone: its half-open sides time out.
sleep 12
sample "end"
server_stop

cp "$OUT/client.json" "$TMP/client.json"
cp "$TMP/server.log" "$OUT/server.log"
echo "soak: $DURATION s, faults: $(sort -k2 "$OUT/faults.log" 2>/dev/null |
	awk '{print $3}' | sort | uniq -c | tr '\n' ' ')"
echo "client: $(cat "$OUT/client.json")"
python3 - "$OUT/soak.csv" "$RSS_SLACK_KIB" "$DURATION" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
slack = int(sys.argv[2])
duration = int(sys.argv[3])
print("t_s     server RSS KiB  fds   client RSS KiB  fds")
for r in rows:
    print("%-7s %14s %4s %16s %4s" % (r["t_s"], r["server_rss_kib"],
          r["server_fds"], r["client_rss_kib"], r["client_fds"]))
bad = []
# The server: every session ended by the last sample; it must be back
# where it was before the first one (its sessions' buffers come and go
# with the connections that faults end, so only the ends compare).
first, end = rows[0], rows[-1]
if int(end["server_fds"]) > int(first["server_fds"]):
    bad.append("server descriptors %s -> %s" % (first["server_fds"],
                                                 end["server_fds"]))
if int(end["server_rss_kib"]) - int(first["server_rss_kib"]) > slack:
    bad.append("server RSS %s -> %s KiB" % (first["server_rss_kib"],
                                            end["server_rss_kib"]))
# The client lives through the run: the lowest RSS of the last third may
# not exceed that of the middle third by more than the slack. From its
# last second on it closes and exits: a sample then can find its
# descriptors closed and its memory going (0 fds, 3840 KiB at t = 60 of
# a 60 s run), which is its end, not a leak.
live = [r for r in rows if r["t_s"] != "end" and r["client_rss_kib"] and
        int(r["t_s"]) < duration]
third = max(1, len(live) // 3)
mid, last = live[third:2 * third], live[2 * third:]
if mid and last:
    grow = (min(int(r["client_rss_kib"]) for r in last) -
            min(int(r["client_rss_kib"]) for r in mid))
    if grow > slack:
        bad.append("client RSS grew %d KiB" % grow)
    fds = [int(r["client_fds"]) for r in mid + last]
    if max(fds) - min(fds) > 4:
        bad.append("client descriptors %d..%d" % (min(fds), max(fds)))
if bad:
    print("soak: not flat: " + "; ".join(bad))
    sys.exit(1)
print("soak: flat (server back to its start, client within %d KiB)" %
      slack)
PY
flat=$?
echo "soak: series in $OUT/soak.csv"
if [ "$rc" != 0 ]; then
	echo "soak: ndkstress exit $rc"
	echo "  client:"
	tail -5 "$OUT/client.log" | sed 's/^/    /'
	echo "  server:"
	tail -5 "$OUT/server.log" | sed 's/^/    /'
	exit 1
fi
[ "$flat" = 0 ] || exit 1
echo "soak: held"
