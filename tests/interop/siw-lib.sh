# SPDX-License-Identifier: MIT
# Sourced by the siw and NVMe interop tests: finds the interop guest
# (tests/interop/vm/ndkvm), builds its image on first use, or exits 77
# (CTest SKIP) saying why. Sets NDKVM.

source "$(dirname "${BASH_SOURCE[0]}")/wait-lib.sh"

siw_find_harness() {
	local top=$1 log=${TMPDIR:-/tmp}/ndkvm-build.log
	NDKVM=$top/tests/interop/vm/ndkvm
	[[ -x $NDKVM ]] || {
		echo "SKIP: $NDKVM is missing"
		exit 77
	}
	command -v qemu-system-x86_64 >/dev/null || [[ $(id -u) == 0 ]] || {
		echo "SKIP: qemu-system-x86_64 is not installed (make deps)"
		exit 77
	}
	if ! "$NDKVM" check >/dev/null; then
		if [[ $(id -u) != 0 || -n ${NDKVM_NO_BUILD:-} ]]; then
			echo "SKIP: no interop guest image (run '$NDKVM build' as root)"
			exit 77
		fi
		echo "building the interop guest image (once, about a minute)"
		if ! "$NDKVM" build >"$log" 2>&1; then
			tail -20 "$log"
			echo "SKIP: '$NDKVM build' failed (no network for apt?)"
			exit 77
		fi
	fi
}

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
# A failed ndkvm run: the failure, and the end of what ndkvm printed (on a
# timeout, the guest console's last lines) where the caller kept it.
siw_vm_failed() { # rc [ndkvm-output-file]
	bad "ndkvm run: rc $1"
	[[ -n ${2:-} && -f $2 ]] && tail -n 40 "$2" | sed 's/^/  [ndkvm] /'
	return 0
}
siw_kill_pids() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}

# Our servers wait for their connections without a limit: once the guest
# has ended no more come, so each PID gets 10 s to exit and is then killed
# (its wait then fails).
siw_stop_after_guest() { # pid...
	local p i
	for p in "$@"; do
		for ((i = 0; i < 100; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill "$p" 2>/dev/null || true
	done
}

# Waits until FILE has at least N lines matching RE; fails after S seconds
# or when process PID has gone.
siw_wait_lines() { # file re n seconds pid
	wait_for_lines "$@"
}

# True if tshark takes every display filter given. Tried on an empty
# capture: a filter tshark refuses would otherwise count 0 frames, and a
# check of "no such frame" would pass without looking. One tshark run for
# all of them; only when it fails, one per filter to name the refused.
siw_tshark_filter_ok() { # filter...
	local e f all= rc
	e=$(mktemp) || return 1
	# A pcap file header (little-endian, version 2.4, Ethernet), no packets.
	printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\0\0\0\0\0\0\0\0\xff\xff\0\0\x01\0\0\0' >"$e"
	for f in "$@"; do all+="${all:+ || }($f)"; done
	tshark -r "$e" -Y "$all" >/dev/null 2>&1
	rc=$?
	if ((rc)); then
		for f in "$@"; do
			tshark -r "$e" -Y "$f" >/dev/null 2>&1 ||
				echo "pcap: tshark refuses the filter: $f"
		done
	fi
	rm -f "$e"
	return $rc
}

# tshark checks of a capture of iWARP connections: no malformed frame, no
# TCP payload that is not MPA, no bad CRC; prints the Good CRC32 count.
# KNOWN_BAD (0) Bad CRC32 are accepted: FPDUs of the peer's whose CRC the
# caller has shown wrong on the wire (siw_known_bad_crc).
siw_check_pcap() { # pcap [known-bad]
	local p=$1 known=${2:-0} n good bad und
	local o=(-o tcp.try_heuristic_first:TRUE --enable-heuristic iwarp_mpa_tcp
		--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)
	command -v tshark >/dev/null || {
		echo "pcap: tshark missing, not checked"
		return 0
	}
	local ufilter='tcp.len > 0 && !iwarp_mpa && !tcp.reassembled_in &&
		!tcp.analysis.retransmission && !tcp.analysis.spurious_retransmission'
	siw_tshark_filter_ok '_ws.malformed' "$ufilter" || return 1
	n=$(tshark -r "$p" "${o[@]}" -Y '_ws.malformed' 2>/dev/null | grep -c . || true)
	# Two passes: a segment of a reassembled FPDU is MPA in the end. TCP
	# retransmissions (slirp under TCG has some) are not dissected again.
	und=$(tshark -2 -r "$p" "${o[@]}" -Y "$ufilter" 2>/dev/null | grep -c . || true)
	tshark -r "$p" "${o[@]}" -V -Y iwarp_mpa 2>/dev/null >"$p.txt" || true
	good=$(grep -c '(Good CRC32)' "$p.txt" || true)
	bad=$(grep -c 'Bad CRC32' "$p.txt" || true)
	rm -f "$p.txt"
	echo "pcap: $n malformed, $und TCP segments not decoded as MPA, $good FPDUs with Good CRC32, $bad Bad CRC32$( ((known)) && echo " ($known known)")"
	[[ $n == 0 && $bad == "$known" && $und == 0 ]]
}

# siw's known transmit fault: an FPDU whose MPA CRC does not match its own
# bytes (the data are right; README.md, "siw sends a wrong MPA CRC").
# When our side reported an MPA CRC error, mpa-walk.py --crc recomputes
# every CRC of the connections on PORT (those with a peer port in PEERS,
# LO-HI, if given). Known only if each bad CRC is in a stream sent by siw
# (SIDE, as mpa-walk.py names the sender: "target" when PORT is siw's,
# "host" when it is ours), is the last FPDU siw sent there or is followed
# only by Sends, or by the rest of its own Write, that siw had queued
# before our Terminate reached it (we ended the connection at it), and the
# streams walk cleanly; prints the FPDUs and
# sets siw_known_crc to their count. Returns 1 otherwise.
siw_known_bad_crc() { # pcap port side [peers] -> siw_known_crc
	local pcap=$1 port=$2 side=$3 peers=${4:-} w
	siw_known_crc=0
	w=$(python3 "$(dirname "${BASH_SOURCE[0]}")/mpa-walk.py" --crc \
		${peers:+--peer-ports "$peers"} "$pcap" "$port" 2>&1 || true)
	grep -q ' 0 streams with errors' <<<"$w" || return 1
	grep -q 'BAD-CRC' <<<"$w" || return 1
	if grep 'BAD-CRC' <<<"$w" | grep -v -q -E \
		"from the $side, .*\((the stream's last|followed only by Sends|followed only by the rest of its message)\)"; then
		return 1
	fi
	siw_known_crc=$(grep -c 'BAD-CRC' <<<"$w")
	grep 'BAD-CRC' <<<"$w" | sed 's/^mpa-walk: /  known: siw sent a wrong MPA CRC: /'
}
