#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# MPA handshake of libndk against the Linux kernel's soft-iWARP (siw) in the
# interop guest (tests/interop/vm/ndkvm), in both directions. Not run by
# CMake or CI: see tests/interop/README.md.
#
#   tests/interop/siw-interop.sh [-D] [-b BUILD_DIR] [-o OUT_DIR] CASE...
#
# BUILD_DIR (default build-probe) holds libndk.so; cm_probe is built there
# from tests/interop/cm_probe.c when missing or older. OUT_DIR defaults to
# /tmp/ndk-interop. 
#
# CASE is DIRECTION-VARIANT:
#   DIRECTION  server  guest 'rping -s' on 10.0.2.15:7174 (hostfwd 17174),
#                      host 'cm_probe connect 17174' (we are the initiator)
#              client  host 'cm_probe listen 17175', guest
#                      'rping -c -a 10.0.2.2 -p 17175' (we are the responder)
#   VARIANT    tokens joined by '+':
#              default  siw module defaults
#              p2p      siw peer_to_peer=1
#              crc      siw mpa_crc_required=1
#              strict   siw mpa_crc_strict=1
#              v1       siw mpa_version=1
#              nocrc    our NDK_MPA_CRC=0 (we do not ask for CRC)
#              pd       we send 9 bytes of private data ("ndk-probe")
#              reject   client only: we NdkReject the request
#              peerclose  rping is killed 3 s after connecting; we hold for
#                       20 s and report the disconnect event
#              delay    server only: CompleteConnect 500 ms after Connect
#                       (delayN: N ms)
#   or "all" for the standard matrix (the ALL list below).
#
# siw's dynamic debug (the CEP/MPA state machine) is switched on in the
# guest and read back with dmesg at the end: it stays in the ring buffer,
# because printing every line on the emulated serial console (the harness's
# --siw-debug, option -D here) slows siw down and widens its races.
#
# Per case OUT_DIR/CASE.{probe,console,pcap,mpa.txt,payload.txt}: the
# probe's output (NDK_LOG=debug), the guest console (siw dynamic debug, rping
# -d, dmesg at the end), the capture of the guest NIC, its tshark decode,
# and each TCP payload in hex.
#
# Network rule: the guest only targets 10.0.2.2 (the host's loopback) or
# itself; the host only 127.0.0.1.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$top/build-probe
out=/tmp/ndk-interop
siw_peer=$top/tests/interop/vm/ndkvm

usage() {
	sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

console_debug=0
while getopts "b:o:Dh" opt; do
	case $opt in
	D) console_debug=1 ;;
	b) build=$(cd "$OPTARG" && pwd) ;;
	o) out=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
(($#)) || usage

ALL=(server-default server-p2p server-crc server-v1 server-delay
	client-default client-p2p client-crc client-v1 client-p2p+crc)
cases=()
for c in "$@"; do
	if [[ $c == all ]]; then cases+=("${ALL[@]}"); else cases+=("$c"); fi
done

mkdir -p "$out"
[[ -f $build/libndk.so ]] || { echo "no $build/libndk.so: cmake -S . -B build-probe -G Ninja && ninja -C build-probe" >&2; exit 2; }
probe=$build/cm_probe
if [[ ! -x $probe || $here/cm_probe.c -nt $probe ]]; then
	cc -I"$top/include" "$here/cm_probe.c" -L"$build" -lndk -lpthread -o "$probe"
fi
export LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

bgpid=""
cleanup() {
	if [[ -n $bgpid ]]; then kill "$bgpid" 2>/dev/null || true; fi
}
trap cleanup EXIT

decode() { # pcap base
	local pcap=$1 base=$2
	if command -v tshark >/dev/null; then
		tshark -r "$pcap" -Y 'iwarp_mpa || iwarp_ddp_rdmap' \
			-O iwarp_mpa,iwarp_ddp_rdmap 2>/dev/null >"$base.mpa.txt" || true
		tshark -r "$pcap" -Y 'tcp.len > 0 || tcp.flags.fin == 1 || tcp.flags.reset == 1' \
			-T fields -E separator=' ' -e frame.time_relative -e ip.src \
			-e tcp.srcport -e tcp.flags.str -e tcp.payload \
			2>/dev/null >"$base.payload.txt" || true
	fi
}

# "Connect/accept status" line and the relevant siw lines, for the summary.
summary() { # base
	local base=$1
	echo "---- $(basename "$base")"
	grep -E 'RESULT|RequestCompletion|-> STATUS|GetConnectionData|DisconnectEvent|Terminate|FATAL' "$base.probe" | sed 's/^/  probe: /' || true
	grep -E 'RDMA_CM_EVENT|cq completion|DISCONNECT|error|RPING-RC|client|server' "$base.console" |
		grep -v -e 'siw0:' -e 'eth0' -e iwpm | sed 's/^/  rping: /' | head -20 || true
	grep -E 'reason=|reply unsupp|reject|got TERMINATE|rtr|extra data|error|MPA|crc|cep state: 7|kernel BUG' "$base.console" |
		grep -e siw -e 'kernel BUG' | awk '!seen[$0]++' | sed 's/^/  siw:   /' | head -30 || true
	[[ -s $base.payload.txt ]] && sed 's/^/  wire:  /' "$base.payload.txt" | cut -c1-160
	return 0
}

run_case() {
	local case=$1 dir=${1%%-*} variant=${1#*-} tok
	local params=() penv=() pargs=() hold=5 gkill=""
	local base=$out/$case
	IFS=+ read -r -a toks <<<"$variant"
	for tok in "${toks[@]}"; do
		case $tok in
		default) ;;
		p2p) params+=(--siw-param peer_to_peer=1) ;;
		crc) params+=(--siw-param mpa_crc_required=1) ;;
		strict) params+=(--siw-param mpa_crc_strict=1) ;;
		v1) params+=(--siw-param mpa_version=1) ;;
		nocrc) penv+=(NDK_MPA_CRC=0) ;;
		pd) pargs+=(-p ndk-probe) ;;
		reject) pargs+=(-x) ;;
		peerclose) hold=20 gkill='sleep 3; kill $rp; ' ;;
		delay) pargs+=(-d 500) ;;
		delay[0-9]*) pargs+=(-d "${tok#delay}") ;;
		*) echo "unknown variant token $tok" >&2; return 2 ;;
		esac
	done
	rm -f "$base".*
	echo "==== $case: siw ${params[*]:-(defaults)} ${penv[*]:-} ${pargs[*]:-}"
	local dbg dmesg='echo "==== dmesg"; dmesg | grep -e siw -e iw_cm -e rdma_cm -e iwpm | grep -v -e "eth0 speed"'
	if ((console_debug)); then
		params+=(--siw-debug)
		dbg=""
	else
		dbg='mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null; echo "module siw +p" >/sys/kernel/debug/dynamic_debug/control; '
	fi
	case $dir in
	server)
		"$siw_peer" run --timeout 120 --hostfwd 17174:7174 \
			--console-log "$base.console" --pcap "$base.pcap" \
			--quiet "${params[@]}" -- \
			"${dbg}rping -s -a 10.0.2.15 -p 7174 -d -v -C 1 & rp=\$!; wait-listen 7174 60; ${gkill}wait \$rp; echo RPING-RC=\$?; $dmesg" \
			>/dev/null 2>&1 &
		bgpid=$!
		local i
		for ((i = 0; i < 600; i++)); do
			grep -q '^NDKVM-LISTENING' "$base.console" 2>/dev/null && break
			kill -0 "$bgpid" 2>/dev/null || break
			sleep 0.2
		done
		env NDK_LOG=debug "${penv[@]}" "$probe" -w 30 -t "$hold" "${pargs[@]}" \
			connect 17174 >"$base.probe" 2>&1 || true
		wait "$bgpid" || true
		bgpid=""
		;;
	client)
		env NDK_LOG=debug "${penv[@]}" "$probe" -w 120 -t "$hold" "${pargs[@]}" \
			listen 17175 >"$base.probe" 2>&1 &
		bgpid=$!
		sleep 0.5
		"$siw_peer" run --timeout 120 \
			--console-log "$base.console" --pcap "$base.pcap" \
			--quiet "${params[@]}" -- \
			"${dbg}rping -c -a 10.0.2.2 -p 17175 -d -v -C 1 & rp=\$!; ${gkill}wait \$rp; echo RPING-RC=\$?; $dmesg" \
			>/dev/null 2>&1 || true
		wait "$bgpid" || true
		bgpid=""
		;;
	*)
		echo "unknown direction $dir" >&2
		return 2
		;;
	esac
	decode "$base.pcap" "$base"
	summary "$base"
}

for c in "${cases[@]}"; do
	run_case "$c"
done
