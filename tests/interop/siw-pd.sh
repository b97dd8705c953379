#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Private data and read limits between libndk and Linux siw, both ways, in
# one boot of the interop guest. No rdma-core 44 tool sends private data
# on iWARP, so the guest runs siw_pd (siw_pd.c, built here on the host
# against librdmacm/libibverbs and copied in); the host runs ndkcmatose
# with -S 0 (connect, exchange nothing, server disconnects):
#   0. siw_pd client with 252 bytes: siw 6.1 puts PD_Length 0 in front of
#      its 4-byte IRD/ORD block and 252 bytes (README.md bug 6): our
#      server must refuse it cleanly and go on listening
#   1. siw_pd client (251 bytes of a binary pattern, siw's real maximum,
#      IRD 7 ORD 5) -> ndkcmatose server (252 bytes of text, IRD 9 ORD 3)
#   2. siw_pd client -> ndkcmatose server that rejects with private data
#      (NdkReject's private data must reach the siw application)
#   3. ndkcmatose client (252 bytes, IRD 6 ORD 4) -> siw_pd server (251
#      bytes of the pattern, accept IRD 5 ORD 3)
#   4. ndkcmatose client -> siw_pd server that rejects with private data
# Checked: every private data byte-exact at the other end, and each
# connection's read limits: our NdkGetConnectionData IRD/ORD against
# siw's "enter RTS: ord=, ird=" (dmesg) and the negotiation rule (a side's
# ORD never above the other's IRD).
#
#   siw-pd.sh BUILD_DIR [OUT_DIR]      exit 0 pass, 1 fail, 77 skip
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: siw-pd.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ndk-siw-pd.XXXXXX)}
. "$here/siw-lib.sh"
siw_find_harness "$top"
bin=$build/tools/interop/ndkcmatose
[[ -x $bin ]] || { echo "no $bin"; exit 1; }
if [[ ! -f /usr/include/rdma/rdma_cma.h || ! -f /usr/include/infiniband/verbs.h ]]; then
	echo "SKIP: rdma-core headers missing (apt-get install librdmacm-dev libibverbs-dev)"
	exit 77
fi
mkdir -p "$out"
rm -f "$out"/*
echo "logs in $out"
pd_bin=$build/tests/interop/siw_pd
mkdir -p "$(dirname "$pd_bin")"
if ! ${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -Werror "$here/siw_pd.c" \
	-o "$pd_bin" -lrdmacm -libverbs >"$out/siw_pd-build.log" 2>&1; then
	cat "$out/siw_pd-build.log"
	echo "SKIP: siw_pd does not build against the installed rdma-core"
	exit 77
fi
siw_checks_begin

# Our 252 bytes: printable (ndkcmatose --private-data takes a string), every one of
# the 94 graphic characters; siw_pd's 251 are (7 i + 1) mod 256, 0x00
# included.
ours=$(python3 -c 'print("".join(chr(0x21 + (i * 5) % 94) for i in range(252)))')
hex_of() { printf '%s' "$1" | od -An -v -tx1 | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }
ours_hex=$(hex_of "$ours")
pattern_hex=$(python3 -c 'print(" ".join("%02x" % ((7 * i + 1) % 256) for i in range(251)))')

g='mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
echo "func siw_qp_nextstate_from_idle +p" >/sys/kernel/debug/dynamic_debug/control
timeout 60 /siw_pd -c 10.0.2.2 -p 17481 -n 252 -r 7 -o 5; echo "PD-RC client-252 $?"
timeout 60 /siw_pd -c 10.0.2.2 -p 17481 -n 251 -r 7 -o 5; echo "PD-RC client $?"
timeout 60 /siw_pd -c 10.0.2.2 -p 17482 -t siw-connect-pd -r 7 -o 5; echo "PD-RC client-rejected $?"
timeout 60 /siw_pd -s 10.0.2.15 -p 7481 -n 251 -r 5 -o 3 & s=$!; wait-listen 7481 60; wait $s; echo "PD-RC server $?"
timeout 60 /siw_pd -s 10.0.2.15 -p 7482 -t siw-reject-pd -x & s=$!; wait-listen 7482 60; wait $s; echo "PD-RC server-reject $?"
echo "==== dmesg"; dmesg | grep -e "enter RTS" -e "kernel BUG" -e "WARNING:" -e "Call Trace"
'
"$bin" -s -b 127.0.0.1 -p 17481 -S 0 -r 9 -o 3 --private-data "$ours" --timeout 60 >"$out/host-server.log" 2>&1 &
srv=$!
pids+=("$srv")
"$bin" -s -b 127.0.0.1 -p 17482 -x --private-data ndk-reject-pd --timeout 60 >"$out/host-reject.log" 2>&1 &
rej=$!
pids+=("$rej")
"$NDKVM" run --timeout 300 --hostfwd 17483:7481 --hostfwd 17484:7482 \
	--file "$pd_bin:/siw_pd" \
	--console-log "$out/console.log" --pcap "$out/guest.pcap" \
	--quiet -- "$g" >"$out/ndkvm.out" 2>&1 &
vm=$!
pids+=("$vm")
if siw_wait_lines "$out/console.log" '^NDKVM-LISTENING' 1 180 "$vm"; then
	"$bin" -S 0 -r 6 -o 4 --private-data "$ours" --timeout 60 127.0.0.1:17483 \
		>"$out/host-client.log" 2>&1 || bad "ndkcmatose client: rc $?"
else
	bad "guest siw_pd server never listened"
fi
if siw_wait_lines "$out/console.log" '^NDKVM-LISTENING' 2 120 "$vm"; then
	rc=0
	"$bin" -S 0 --private-data ndk-connect-pd --timeout 60 127.0.0.1:17484 \
		>"$out/host-rejected.log" 2>&1 || rc=$?
	((rc == 3)) || bad "ndkcmatose client against a rejecting siw: rc $rc, not 3"
else
	bad "guest rejecting siw_pd server never listened"
fi
wait "$vm" || siw_vm_failed $? "$out/ndkvm.out"
siw_stop_after_guest "$srv" "$rej"
wait "$srv" || bad "ndkcmatose server: rc $?"
wait "$rej" || bad "ndkcmatose rejecting server: rc $?"
tr -d '\r' <"$out/console.log" >"$out/console.txt"
mv "$out/console.txt" "$out/console.log"
for f in host-server host-reject host-client host-rejected; do
	grep -v 'opened adapter' "$out/$f.log" | cut -c1-160 | sed "s/^/  [$f] /"
done
grep -E '^PD-RC|siw_pd: (event|.*depth|rejected|exit)|enter RTS|kernel BUG|WARNING:' \
	"$out/console.log" | sed 's/^/  [guest] /'
grep -E '^siw_pd: (received|sending) private data' "$out/console.log" |
	cut -c1-100 | sed 's/^/  [guest] /'

for r in "client-252 3" "client 0" "client-rejected 3" "server 0" "server-reject 0"; do
	grep -q "^PD-RC $r\$" "$out/console.log" || bad "guest siw_pd ${r% *} did not exit ${r#* }"
done

grep -q 'bad MPA Request: MPA v2 private data shorter than the IRD/ORD block' "$out/host-server.log" ||
	bad "0: our server did not refuse siw's 252-byte Request (PD_Length 0)"

# Private data, byte-exact, as each receiving application saw it. The
# guest's lines come in run order: client-252 (nothing: refused),
# client, client-rejected, server, server-reject.
mapfile -t got < <(sed -n 's/^siw_pd: received private data [0-9]* bytes: *//p' "$out/console.log" | tail -n +2)
[[ ${got[0]:-} == "$ours_hex" ]] || bad "1: siw client got '${got[0]:-}' in the Reply, not our 252 bytes"
# NdkReject closes right after the reject frame (as siw's rdma_reject
# does); siw sometimes handles our FIN before the frame and reports
# REJECTED without private data (README.md bug 7). The frame itself must
# carry the data (checked in the capture below).
if [[ -z ${got[1]:-} ]]; then
	echo "NOTE: 2: siw reported our reject without its private data (bug 7)"
elif [[ ${got[1]} != "$(hex_of ndk-reject-pd)" ]]; then
	bad "2: siw client got '${got[1]:-}' in our reject, not 'ndk-reject-pd'"
fi
if command -v tshark >/dev/null; then
	rej=$(tshark -r "$out/guest.pcap" -o tcp.try_heuristic_first:TRUE \
		-Y 'iwarp_mpa.rej_flag == 1 && tcp.srcport == 17482' -T fields \
		-e iwarp_mpa.privatedata 2>/dev/null | tr -d ':\n')
	[[ $rej == *"$(hex_of ndk-reject-pd | tr -d ' ')" ]] ||
		bad "2: our reject frame does not carry 'ndk-reject-pd' ('$rej')"
fi
[[ ${got[2]:-} == "$ours_hex" ]] || bad "3: siw server got '${got[2]:-}' in the Request, not our 252 bytes"
[[ ${got[3]:-} == "$(hex_of ndk-connect-pd)" ]] ||
	bad "4: siw server got '${got[3]:-}' in the Request, not 'ndk-connect-pd'"
ndk_pd() { # log what
	sed -n "s/^cmatose: $2: IRD [0-9]* ORD [0-9]*, peer private data [0-9]* bytes: \([0-9a-f ]*\) \".*/\1/p" "$1" | head -1
}
[[ $(ndk_pd "$out/host-server.log" established) == "$pattern_hex" ]] ||
	bad "1: our server did not get siw's 251 bytes"
[[ $(ndk_pd "$out/host-reject.log" 'connect request') == "$(hex_of siw-connect-pd)" ]] ||
	bad "2: our rejecting server did not get 'siw-connect-pd'"
[[ $(ndk_pd "$out/host-client.log" 'connect reply') == "$pattern_hex" ]] ||
	bad "3: our client did not get siw's 251 bytes in the Reply"
[[ $(ndk_pd "$out/host-rejected.log" reject) == "$(hex_of siw-reject-pd)" ]] ||
	bad "4: our client did not get 'siw-reject-pd' in siw's reject"

# Read limits, per connection (1 and 3): siw's own (the rdma_cm event,
# "negotiated: ird I ord O") against our NdkGetConnectionData. siw's ORD
# must equal our IRD and its IRD be at least our ORD; ours follow our
# rule (each request capped by the peer's opposite value). siw's "enter
# RTS" line shows its queue sizes, the same values rounded up to a power
# of two (siw_qp.c).
mapfile -t neg < <(sed -n 's/^siw_pd: negotiated: ird \([0-9]*\) ord \([0-9]*\)$/\1 \2/p' "$out/console.log")
mapfile -t rts < <(grep -o 'enter RTS: crc=., ord=[0-9]*, ird=[0-9]*' "$out/console.log")
lim() { sed -n "s/^cmatose: $2: IRD \([0-9]*\) ORD \([0-9]*\),.*/\1 \2/p" "$1" | head -1; }
ours=("$(lim "$out/host-server.log" established)" "$(lim "$out/host-client.log" 'connect reply')")
# 1: siw asks IRD 7 ORD 5, we accept with IRD 9 ORD 3 -> ours 5/3.
# 3: we ask IRD 6 ORD 4, siw accepts with IRD 5 ORD 3 -> ours 3/4.
want=("5 3" "3 4")
pow2() { local v=1; while ((v < $1)); do v=$((v * 2)); done; echo $v; }
for k in 0 1; do
	n=$((2 * k + 1))
	read -r o_ird o_ord <<<"${ours[$k]}"
	read -r s_ird s_ord <<<"${neg[$k]:-}"
	echo "read limits $n: ours IRD ${o_ird:-?} ORD ${o_ord:-?}; siw IRD ${s_ird:-?} ORD ${s_ord:-?}, '${rts[$k]:-}'"
	[[ ${ours[$k]} == "${want[$k]}" ]] || bad "$n: our IRD/ORD '${ours[$k]}', want '${want[$k]}'"
	if [[ -z ${s_ird:-} || -z ${o_ird:-} ]]; then
		bad "$n: read limits missing"
		continue
	fi
	((s_ord == o_ird)) || bad "$n: siw's ORD $s_ord is not our IRD $o_ird"
	((s_ird >= o_ord)) || bad "$n: siw's IRD $s_ird is below our ORD $o_ord"
	[[ ${rts[$k]:-} == *"ord=$(pow2 "$s_ord"), ird=$(pow2 "$s_ird")" ]] ||
		bad "$n: siw's RTS line '${rts[$k]:-}' does not match its IRD $s_ird ORD $s_ord"
done
if grep -q -e 'kernel BUG' -e 'WARNING:' -e 'Call Trace' "$out/console.log"; then
	bad "guest kernel BUG/WARNING"
fi
siw_check_pcap "$out/guest.pcap" || bad "capture does not decode cleanly"
if ((fail)); then
	echo "FAIL: logs in $out"
	exit 1
fi
echo "PASS: private data both ways (252 bytes ours, 251 siw's, rejects), read limits agreed"
[[ -n ${2:-} ]] || rm -rf "$out"
