#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The fault matrix: ndkstress traffic (mixed Sends, Writes and Reads of
# 1 B to 4 MiB, every byte checked, every request accounted for) between
# two network namespaces joined by a veth pair, under one fault at a time.
# nftables makes the faults (this kernel has no netem): loss and TCP
# resets in a netdev ingress chain, duplicates with "dup to" in an egress
# chain, corruption that TCP cannot see by rewriting payload bytes (nft
# fixes the TCP checksum), and the link or a peer going away by hand.
#
# Every scenario must end with no wrong byte reported as success and every
# posted request completed exactly once (ndkstress exits 0); corruption
# must be caught by the MPA CRC as Terminates; the control scenario (the
# same corruption with CRC off) must show wrong bytes, or the checker is
# blind. The last scenario ends FAULTED_CONNECTIONS connections by
# injected resets and checks that the server's descriptors and memory do
# not grow.
#
# usage: tests/reliability/faults.sh BUILD_DIR [SECONDS]
#   SECONDS per scenario (default 20; `make test` uses 2).
#   FAULTED_CONNECTIONS (default 1000) for the last scenario.
# Needs root, ip, nft and veth; exits 77 (skip) without them.
set -uo pipefail

BUILD=${1:?usage: faults.sh BUILD_DIR [SECONDS]}
SECS=${2:-20}
FAULTED=${FAULTED_CONNECTIONS:-1000}
PROG=faults.sh
STRESS=$BUILD/tools/perf/ndkstress
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

FAILED=0
RESULTS=$TMP/results

# verdict NAME EXPECT: checks the run; EXPECT is clean, terminates (the
# CRC must have caught something) or blind (wrong bytes must show).
verdict() {
	local name=$1 expect=$2 ok=yes why=""
	local wrong terms unknown posted completed conns ops mb
	wrong=$(field mismatches)
	terms=$(field ended_terminate)
	unknown=$(field unknown_completions)
	posted=$(field posted)
	completed=$(field completed)
	conns=$(field connections)
	ops=$(($(field send) + $(field write) + $(field read)))
	mb=$(python3 -c "print(round($(field bytes_verified) / 1e6))")
	case $expect in
	blind)
		[ "$wrong" -gt 0 ] || { ok=no; why="no wrong byte seen: the checker is blind"; }
		;;
	*)
		[ "$CLIENT_RC" = 0 ] || { ok=no; why="ndkstress exit $CLIENT_RC"; }
		[ "$wrong" = 0 ] || { ok=no; why="$why; $wrong wrong"; }
		[ "$unknown" = 0 ] || { ok=no; why="$why; $unknown unknown completions"; }
		[ "$posted" = "$completed" ] || { ok=no; why="$why; posted $posted, completed $completed"; }
		if [ "$expect" = terminates ] && [ "$terms" -le 0 ]; then
			ok=no
			why="$why; no Terminate"
		fi
		;;
	esac
	printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$conns" \
		"$ops" "$mb" "$wrong" "$posted / $completed" "$terms" \
		"$ok${why:+ ($why)}" | tee -a "$RESULTS"
	if [ "$ok" != yes ]; then
		FAILED=$((FAILED + 1))
		sed 's/^/    client: /' "$TMP/client.log" | tail -5
	fi
}

# run NAME EXPECT SETUP: a scenario with SETUP's nft rules or link state.
run() {
	local name=$1 expect=$2 setup=$3
	faults_clear
	eval "$setup"
	server_start
	client "$SECS"
	server_stop
	verdict "$name" "$expect"
	faults_clear
}

echo "| Fault | Connections | Operations | MB verified | Wrong bytes | Requests posted / completed | Terminates | Holds |"
echo "|---|---|---|---|---|---|---|---|"
run "none, MTU 1500" clean ""
run "MTU 1280" clean "ip -n $NSA link set vA mtu 1280; ip -n $NSB link set vB mtu 1280"
run "MTU 9000" clean "ip -n $NSA link set vA mtu 9000; ip -n $NSB link set vB mtu 9000"
run "loss 5% each way" clean "fault_apply loss"
run "duplicates 2% each way" clean "fault_apply dup"
run "corruption past the TCP checksum, CRC on" terminates "fault_apply corrupt"
CRC=0 run "control: the same corruption, CRC off" blind "fault_apply corrupt"

# The link goes down for 5 s in the middle and comes back: TCP rides it
# out (NDK_PEER_TIMEOUT_MS is 30 s).
faults_clear
server_start
( sleep $((SECS / 2 > 1 ? SECS / 2 : 1)); ip -n "$NSA" link set vA down
  sleep 5; ip -n "$NSA" link set vA up ) &
flapper=$!
client $((SECS + 5))
wait "$flapper"
server_stop
verdict "link down 5 s, then up" clean

# The server is killed mid-transfer and started again 1 s later: the
# client sees the connection end, accounts for every request, reconnects.
server_start
( sleep $((SECS / 2 > 1 ? SECS / 2 : 1)); kill -9 $SRV; sleep 1
  ip netns exec "$NSB" "$STRESS" -s -b $ADDR_B >"$TMP/server2.log" 2>&1 &
  echo $! >"$TMP/server2.pid"; wait ) &
killer=$!
client $((SECS + 2))
kill "$(cat "$TMP/server2.pid" 2>/dev/null)" 2>/dev/null
kill "$killer" 2>/dev/null
wait "$killer" 2>/dev/null
SRV=0
verdict "SIGKILL of the server mid-transfer" clean

# The client is killed mid-transfer: the server ends that session and
# serves the next client cleanly.
server_start
ip netns exec "$NSA" "$STRESS" -D 60 $ADDR_B >/dev/null 2>&1 &
victim=$!
sleep 2
kill -9 "$victim"
wait "$victim" 2>/dev/null
client "$SECS"
server_stop
verdict "SIGKILL of the client, then a new client" clean

# Many connections ended by faults: injected resets end connections
# again and again. The reset goes to the client only, so the server's
# side of each is left half-open until its keepalive probe is answered
# with a reset (NDK_PEER_TIMEOUT_MS, 10 s here: a probe after 5 s idle);
# after that the server's descriptors and memory must be back.
faults_clear
PEER_TIMEOUT=10000 server_start
sleep 0.5
fd0=$(ls /proc/$SRV/fd | wc -l)
rss0=$(awk '/^VmRSS/ {print $2}' /proc/$SRV/status)
fault_apply resets
client 600 -c "$FAULTED" -S 64k
faults_clear
waited=0
while [ $waited -lt 60 ]; do
	fd1=$(ls /proc/$SRV/fd | wc -l)
	rss1=$(awk '/^VmRSS/ {print $2}' /proc/$SRV/status)
	[ "$fd1" -le "$fd0" ] && [ $((rss1 - rss0)) -le 32768 ] && break
	sleep 1
	waited=$((waited + 1))
done
server_stop
verdict "$(field connections) connections ended by injected resets" clean
echo
echo "server after $(field connections) faulted connections: descriptors" \
	"$fd0 -> $fd1, RSS $rss0 -> $rss1 KiB, $waited s after the last one"
if [ "$(field connections)" -lt "$FAULTED" ]; then
	echo "faults.sh: only $(field connections) of $FAULTED connections"
	FAILED=$((FAILED + 1))
fi
if [ "$fd1" -gt "$fd0" ]; then
	echo "faults.sh: the server's descriptors did not come back"
	FAILED=$((FAILED + 1))
fi
# Allocator caches may keep some pages; a leak grows with connections.
if [ $((rss1 - rss0)) -gt 32768 ]; then
	echo "faults.sh: the server's RSS stayed $((rss1 - rss0)) KiB higher"
	FAILED=$((FAILED + 1))
fi

[ "$FAILED" = 0 ] || { echo "faults.sh: $FAILED scenario(s) failed"; exit 1; }
echo "faults.sh: every scenario held"
