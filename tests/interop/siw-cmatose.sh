#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ndkcmatose against rdma-core's ucmatose on Linux siw, in one boot of the
# interop guest (tests/interop/vm/ndkvm):
#   1. guest 'ucmatose' server (forwarded 17471 -> 7471), host
#      'ndkcmatose HOST': 2 connections, 10 messages each way, our private
#      data in the Request (checked in the capture)
#   2. guest 'ucmatose -s 10.0.2.2 -p 17472' with siw's default
#      parameters (no peer_to_peer: no RTR, our Accept completes once the
#      Reply is out), host ndkcmatose server with private data in the
#      Reply; then the same with siw peer_to_peer=1 (siw sends an RTR)
#      against a second host server on 17474
#   3. guest 'ucmatose -s 10.0.2.2 -p 17473', host server rejects with
#      private data: ucmatose must report RDMA_CM_EVENT_REJECTED
# ucmatose's server speaks first: against siw's accept window (README.md
# bug 1) our client relies on the library's RTR nudge (siw-lib.sh sets
# NDK_RTR_NUDGE_MS); NDK_SIW_RTR_DELAY_MS (0) is the old workaround, a
# wait before CompleteConnect.
#
#   siw-cmatose.sh BUILD_DIR [OUT_DIR]      exit 0 pass, 1 fail, 77 skip
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: siw-cmatose.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ndk-siw-cmatose.XXXXXX)}
. "$here/siw-lib.sh"
siw_find_harness "$top"
bin=$build/tools/interop/ndkcmatose
[[ -x $bin ]] || { echo "no $bin"; exit 1; }
mkdir -p "$out"
rm -f "$out"/*
echo "logs in $out"
delay=${NDK_SIW_RTR_DELAY_MS:-0}
delay_s=$(awk -v ms="$delay" 'BEGIN { printf "%.3f", ms / 1000 }')
siw_checks_begin

g='mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
echo "func siw_qp_nextstate_from_idle +p" >/sys/kernel/debug/dynamic_debug/control
timeout 60 ucmatose -b 10.0.2.15 -p 7471 -c 2 -C 10 -S 100 & u=$!; wait-listen 7471 60; wait $u; echo "UCMA-RC server $?"
timeout 60 ucmatose -s 10.0.2.2 -p 17472 -c 2 -C 10 -S 100; echo "UCMA-RC client $?"
echo 1 >/sys/module/siw/parameters/peer_to_peer
timeout 60 ucmatose -s 10.0.2.2 -p 17474 -c 2 -C 10 -S 100; echo "UCMA-RC client-p2p $?"
echo 0 >/sys/module/siw/parameters/peer_to_peer
timeout 60 ucmatose -s 10.0.2.2 -p 17473; echo "UCMA-RC client-reject $?"
echo "==== dmesg"; dmesg | grep -e "enter RTS" -e TERM -e "kernel BUG" -e "WARNING:" -e "Call Trace" -e "reject"
'
"$bin" -s -b 127.0.0.1 -p 17472 -c 2 -n 10 -S 100 --private-data ndk-accept-pd --timeout 60 >"$out/host-server.log" 2>&1 &
srv=$!
pids+=("$srv")
"$bin" -s -b 127.0.0.1 -p 17474 -c 2 -n 10 -S 100 --private-data ndk-accept-pd --timeout 60 >"$out/host-server-p2p.log" 2>&1 &
srvp=$!
pids+=("$srvp")
"$bin" -s -b 127.0.0.1 -p 17473 -x --private-data ndk-reject-pd --timeout 60 >"$out/host-reject.log" 2>&1 &
rej=$!
pids+=("$rej")
"$NDKVM" run --timeout 300 --hostfwd 17471:7471 \
	--console-log "$out/console.log" --pcap "$out/guest.pcap" \
	--quiet -- "$g" >"$out/ndkvm.out" 2>&1 &
vm=$!
pids+=("$vm")
if siw_wait_lines "$out/console.log" '^NDKVM-LISTENING' 1 120 "$vm"; then
	"$bin" -c 2 -n 10 -S 100 --private-data ndk-connect-pd --rtr-delay "$delay_s" --timeout 60 127.0.0.1:17471 \
		>"$out/host-client.log" 2>&1 || bad "ndkcmatose client: rc $?"
else
	bad "guest ucmatose server never listened"
fi
wait "$vm" || siw_vm_failed $? "$out/ndkvm.out"
siw_stop_after_guest "$srv" "$srvp" "$rej"
wait "$srv" || bad "ndkcmatose server: rc $?"
wait "$srvp" || bad "ndkcmatose server (siw p2p): rc $?"
wait "$rej" || bad "ndkcmatose rejecting server: rc $?"
tr -d '\r' <"$out/console.log" >"$out/console.txt"
mv "$out/console.txt" "$out/console.log"
for f in host-client host-server host-server-p2p host-reject; do
	grep -v 'opened adapter' "$out/$f.log" | sed "s/^/  [$f] /"
done
grep -E '^UCMA-RC|cmatose|RDMA_CM|enter RTS|kernel BUG|WARNING:' "$out/console.log" | sed 's/^/  [guest] /'

grep -q '^UCMA-RC server 0$' "$out/console.log" || bad "guest ucmatose server did not exit 0"
grep -q '^UCMA-RC client 0$' "$out/console.log" || bad "guest ucmatose client (siw defaults) did not exit 0"
grep -q '^UCMA-RC client-p2p 0$' "$out/console.log" || bad "guest ucmatose client (p2p) did not exit 0"
grep -q 'RDMA_CM_EVENT_REJECTED' "$out/console.log" || bad "guest ucmatose saw no REJECTED"
grep -q '^UCMA-RC client-reject 0$' "$out/console.log" && bad "rejected ucmatose exited 0"
(($(grep -c 'connect reply: IRD 1 ORD 1' "$out/host-client.log") == 2)) ||
	bad "our client: read limits not 1/1 on both connections"
for f in host-server host-server-p2p; do
	(($(grep -c 'established: IRD 1 ORD 1, peer private data 0 bytes' "$out/$f.log") == 2)) ||
		bad "$f: read limits or private data of siw's requests"
	grep -q 'data transfers complete' "$out/$f.log" || bad "$f: no data transfers"
done
grep -q 'data transfers complete' "$out/host-client.log" || bad "our client: no data transfers"
if grep -q -e 'kernel BUG' -e 'WARNING:' -e 'Call Trace' "$out/console.log"; then
	bad "guest kernel BUG/WARNING"
fi
(($(grep -c 'enter RTS: crc=., ord=1, ird=1' "$out/console.log") >= 6)) ||
	bad "siw's read limits are not 1/1 on 6 connections"

# Our private data on the wire, after the 4-byte MPA v2 block: the
# Request (to ucmatose), the Reply (to ucmatose -s) and the reject.
if command -v tshark >/dev/null; then
	pd=$(tshark -r "$out/guest.pcap" -o tcp.try_heuristic_first:TRUE \
		-Y 'iwarp_mpa.privatedata' -T fields -e iwarp_mpa.rej_flag \
		-e iwarp_mpa.privatedata 2>/dev/null | sort -u)
	echo "$pd" | sed 's/^/  [pcap] private data: /'
	for t in ndk-connect-pd ndk-accept-pd ndk-reject-pd; do
		hex=$(printf '%s' "$t" | od -An -tx1 | tr -d ' \n')
		echo "$pd" | tr -d ':' | grep -q "$hex" || bad "no '$t' in an MPA frame"
	done
fi
siw_check_pcap "$out/guest.pcap" || bad "capture does not decode cleanly"
if ((fail)); then
	echo "FAIL: logs in $out"
	exit 1
fi
echo "PASS: ucmatose both ways, reject with private data"
[[ -n ${2:-} ]] || rm -rf "$out"
