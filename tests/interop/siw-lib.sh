# SPDX-License-Identifier: MIT
# Sourced by the siw interop tests: finds the siw-peer harness and its
# image, or exits 77 (CTest SKIP) saying why. Sets SIW_PEER.
#
# Where the harness is looked for, in order: $SIW_PEER; shared/siw-peer
# next to the checkout (the project workspace layout); /work/shared.

siw_find_harness() {
	local top=$1 c
	for c in "${SIW_PEER:-}" "$top/../shared/siw-peer/siw-peer" \
		/work/shared/siw-peer/siw-peer; do
		if [[ -n $c && -x $c ]]; then
			SIW_PEER=$c
			break
		fi
	done
	if [[ -z ${SIW_PEER:-} || ! -x $SIW_PEER ]]; then
		echo "SKIP: siw-peer harness not found (set SIW_PEER to shared/siw-peer/siw-peer)"
		exit 77
	fi
	local cache=${SIW_PEER_CACHE:-/var/tmp/siw-peer}
	if [[ ! -s $cache/vmlinuz || ! -s $cache/initramfs.cpio.gz ]]; then
		if [[ $(id -u) != 0 || -n ${SIW_PEER_NO_BUILD:-} ]]; then
			echo "SKIP: no siw-peer image in $cache (run '$SIW_PEER build' as root)"
			exit 77
		fi
		echo "building the siw-peer image (once, ~1.5 min)"
		if ! "$SIW_PEER" build >"${TMPDIR:-/tmp}/siw-peer-build.log" 2>&1; then
			tail -20 "${TMPDIR:-/tmp}/siw-peer-build.log"
			echo "SKIP: '$SIW_PEER build' failed (network?)"
			exit 77
		fi
	fi
	command -v qemu-system-x86_64 >/dev/null || {
		echo "SKIP: qemu-system-x86_64 missing (run '$SIW_PEER build' as root)"
		exit 77
	}
}

# Waits until FILE has at least N lines matching RE; fails after S seconds
# or when process PID has gone.
# What every siw test script starts its checks with: the failure flag and
# bad() that sets it, background processes (pids) killed on exit, and the
# library's info log (the scripts read it).
siw_checks_begin() {
	fail=0
	pids=()
	trap siw_kill_pids EXIT
	export NDK_LOG=info
}
bad() {
	echo "FAIL: $*"
	fail=1
}
siw_kill_pids() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}

siw_wait_lines() { # file re n seconds pid
	local i n
	for ((i = 0; i < $4 * 10; i++)); do
		n=$(grep -c -e "$2" "$1" 2>/dev/null || true)
		((${n:-0} >= $3)) && return 0
		kill -0 "$5" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# tshark checks of a capture of iWARP connections: no malformed frame, no
# TCP payload that is not MPA, no bad CRC; prints the Good CRC32 count.
siw_check_pcap() { # pcap
	local p=$1 n good bad und
	local o=(-o tcp.try_heuristic_first:TRUE --enable-heuristic iwarp_mpa_tcp
		--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)
	command -v tshark >/dev/null || {
		echo "pcap: tshark missing, not checked"
		return 0
	}
	n=$(tshark -r "$p" "${o[@]}" -Y '_ws.malformed' 2>/dev/null | grep -c . || true)
	# Two passes: a segment of a reassembled FPDU is MPA in the end. TCP
	# retransmissions (slirp under TCG has some) are not dissected again.
	und=$(tshark -2 -r "$p" "${o[@]}" -Y 'tcp.len > 0 && !iwarp_mpa && !tcp.reassembled_in &&
		!tcp.analysis.retransmission && !tcp.analysis.spurious_retransmission' \
		2>/dev/null | grep -c . || true)
	tshark -r "$p" "${o[@]}" -V -Y iwarp_mpa 2>/dev/null >"$p.txt" || true
	good=$(grep -c '(Good CRC32)' "$p.txt" || true)
	bad=$(grep -c 'Bad CRC32' "$p.txt" || true)
	rm -f "$p.txt"
	echo "pcap: $n malformed, $und TCP segments not decoded as MPA, $good FPDUs with Good CRC32, $bad Bad CRC32"
	[[ $n == 0 && $bad == 0 && $und == 0 ]]
}
