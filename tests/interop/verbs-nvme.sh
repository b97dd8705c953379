#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The NVMe tools (tools/nvme) over libndk's verbs provider, in one boot of
# the interop guest (tests/interop/vm/ndkvm):
#
#   host-target  guest 'ndknvme' (NDK_PROVIDER=verbs, siw0) against
#                'ndknvmet' on the host (software) at 10.0.2.2:14450:
#                id, write + verify of two ranges, a verify with the
#                wrong pattern (must fail), a verified randrw load, badcmd
#   guest-target guest 'ndknvmet' (NDK_PROVIDER=verbs, siw0) on
#                10.0.2.15:4430, forwarded from 127.0.0.1:14451:
#                  1. the host's 'ndknvme' (software): id, write, verify,
#                     load
#                  2. the guest kernel's nvme-rdma host on the same siw0
#                     (nvme connect to 10.0.2.15: siw over the loopback):
#                     dd of a pattern, read back and compared
#   rxe          siw0 replaced by rxe0; the guest kernel's nvmet-rdma
#                (null_blk) on 10.0.2.15:4420 and 'ndknvme'
#                (NDK_PROVIDER=verbs, rxe0) against it in the guest:
#                id, write + verify, load with one MR per queue, then
#                write + verify, load with a fast-registered MR per
#                command that the target invalidates remotely
#
# MPA CRC is off on the host (NDK_MPA_CRC=0, as siw-nvme-host.sh): siw 6.1
# misreads a CRC split over two TCP segments (README.md, N1).
#
#   verbs-nvme.sh BUILD_DIR [OUT_DIR]     exit 0 pass, 1 fail, 77 skip
#
# NVME_LOAD_SECONDS (3) is the length of each load. Not in CTest: one boot
# of about 30 s under TCG (verbs-cross.sh, which is, runs the host's
# ndknvme against the guest's ndknvmet).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ndkvm=$here/vm/ndkvm
lock=${NDKVM_LOCK:-/tmp/ndkvm.lock}
build=$(cd "${1:?usage: verbs-nvme.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ndk-verbs-nvme.XXXXXX)}
. "$here/wait-lib.sh"

host_bin=$build/tools/ndknvme
tgt_bin=$build/tools/ndknvmet
for t in "$host_bin" "$tgt_bin"; do
	[[ -x $t ]] || { echo "no $t" >&2; exit 1; }
done
if ! "$ndkvm" check >/dev/null 2>&1; then
	echo "verbs-nvme: the interop guest cannot run here (ndkvm build?)" >&2
	exit 77
fi
secs=${NVME_LOAD_SECONDS:-3}
mkdir -p "$out"
rm -f "$out"/*
echo "logs in $out"
nqn=nqn.2024-01.io.libndk:verbs-nvme
export NDK_MPA_CRC=0

# run NAME CMD...: in the guest, the command's output with its name in
# front of each line, then "NAME-RC N".
g='export LD_LIBRARY_PATH=/opt/ndk
N='$nqn' S='$secs'
run() {
	name=$1; shift
	"$@" >/tmp/$name.log 2>&1; rc=$?
	sed "s/^/$name: /" /tmp/$name.log | tail -n 12
	echo "$name-RC $rc"
}
H="/opt/ndk/ndknvme --nqn $N -q 2"
echo "== host-target: guest ndknvme (verbs, siw0) -> host ndknvmet (software)"
export NDK_PROVIDER=verbs
run A-ID $H -v 10.0.2.2:14450 id
run A-WRITE1 $H 10.0.2.2:14450 write 0 2048 --pattern 7
run A-VERIFY1 $H 10.0.2.2:14450 verify 0 2048 --pattern 7
run A-WRITE2 $H 10.0.2.2:14450 write 100003 777 --pattern 9
run A-VERIFY2 $H 10.0.2.2:14450 verify 100003 777 --pattern 9
run A-WRONG $H 10.0.2.2:14450 verify 0 2048 --pattern 8
run A-LOAD $H 10.0.2.2:14450 load --rw randrw --bs 4096 --qd 8 -D $S
run A-BADCMD $H 10.0.2.2:14450 badcmd

echo "== guest-target: guest ndknvmet (verbs, siw0)"
/opt/ndk/ndknvmet -b 10.0.2.15 -p 4430 --nqn $N --ram 64m -q 2 >/tmp/tgt.log 2>&1 & tgt=$!
wait-listen 4430 60
# The host runs its four ndknvme commands now: a controller each.
i=0; while [ $i -lt 3000 ] && [ "$(grep -c "ctrl .*: freed" /tmp/tgt.log)" -lt 4 ]; do
	sleep 0.1; i=$((i + 1)); done
echo "GUEST-TARGET-HOST-DONE $(grep -c "ctrl .*: freed" /tmp/tgt.log)"
nvme connect -t rdma -a 10.0.2.15 -s 4430 -n $N -i 1; echo "KNVME-CONNECT $?"
for i in $(seq 40); do [ -b /dev/nvme0n1 ] && break; sleep 0.25; done
if [ -b /dev/nvme0n1 ]; then
	dd if=/dev/urandom of=/tmp/pat bs=1M count=2 2>/dev/null
	for bs in 4k 128k; do
		dd if=/tmp/pat of=/dev/nvme0n1 bs=$bs count=$((2 * 1048576 / ${bs%k} / 1024)) oflag=direct 2>/dev/null; w=$?
		dd if=/dev/nvme0n1 of=/tmp/back bs=$bs count=$((2 * 1048576 / ${bs%k} / 1024)) iflag=direct 2>/dev/null; r=$?
		if [ $w = 0 ] && [ $r = 0 ] && cmp -s /tmp/pat /tmp/back; then echo "KNVME-DD $bs ok"; else echo "KNVME-DD $bs BAD w=$w r=$r"; fi
	done
	nvme disconnect -n $N; echo "KNVME-DISCONNECT $?"
fi
sleep 1
kill -TERM $tgt; wait $tgt; echo "GUEST-TARGET-RC $?"
sed "s/^/guest-target: /" /tmp/tgt.log | grep -v -e "I/O queue" | tail -n 30

echo "== rxe: guest ndknvme (verbs, rxe0) -> guest kernel nvmet-rdma"
modload rdma_rxe >/dev/null
rdma link delete siw0
rdma link add rxe0 type rxe netdev eth0 && echo "RXE-UP"
modload null_blk nr_devices=1 memory_backed=1 gb=1 bs=512 || echo "RXE-FAIL null_blk"
n=/sys/kernel/config/nvmet
s=$n/subsystems/$N
mkdir $s
echo 1 >$s/attr_allow_any_host
mkdir $s/namespaces/1
echo /dev/nullb0 >$s/namespaces/1/device_path
echo 1 >$s/namespaces/1/enable
mkdir $n/ports/1
echo rdma >$n/ports/1/addr_trtype
echo ipv4 >$n/ports/1/addr_adrfam
echo 10.0.2.15 >$n/ports/1/addr_traddr
echo 4420 >$n/ports/1/addr_trsvcid
ln -s $s $n/ports/1/subsystems/$N || echo "RXE-FAIL port"
/opt/ndk/ndkinfo -I eth0 | grep -E "^(Provider|Device|RdmaTechnology) " | sed "s/^/rxe: /"
# rxe says why it refuses a bind or an invalidation (dynamic debug), for
# all its checks but an unknown rkey or MR: shown in the dmesg below.
mount -t debugfs none /sys/kernel/debug 2>/dev/null
echo "file rxe_mw.c +p" >/sys/kernel/debug/dynamic_debug/control 2>/dev/null || echo "RXE-NO-DYNDBG"
# One MR per queue, then a fast-registered MR per command, which the
# target invalidates by Send with Invalidate (a type 2 window on rxe:
# docs/verbs.md, Fast registration).
run C-ID $H --mem global -v 10.0.2.15:4420 id
run C-WRITE $H --mem global 10.0.2.15:4420 write 5000 1000 --pattern 3
run C-VERIFY $H --mem global 10.0.2.15:4420 verify 5000 1000 --pattern 3
run C-LOAD $H --mem global 10.0.2.15:4420 load --rw randrw --bs 4096 --qd 8 -D $S
run C-FR-WRITE $H --mem fr 10.0.2.15:4420 write 7000 1000 --pattern 6
run C-FR-VERIFY $H --mem fr 10.0.2.15:4420 verify 7000 1000 --pattern 6
run C-FR-LOAD $H --mem fr 10.0.2.15:4420 load --rw randrw --bs 65536 --qd 8 -D $S
# The counts of rxe (retries, RNR, errors), for a failure of the above.
for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do
	v=$(cat $f); [ "$v" != 0 ] && echo "RXE-COUNTER ${f##*/} $v"
done
echo "==== dmesg"
dmesg | grep -i -e nvme -e "kernel BUG" -e "WARNING:" -e "Call Trace" -e "siw" -e rxe | grep -v -e "SoftiWARP attached" -e "loading out-of-tree" -e "module verification" | tail -n 40
'

fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT
NDK_PROVIDER=software "$tgt_bin" -b 127.0.0.1 -p 14450 --nqn "$nqn" --ram 64m \
	-q 2 >"$out/host-ndknvmet.log" 2>&1 &
tgt=$!
pids+=("$tgt")
wait_for_lines "$out/host-ndknvmet.log" '^ndknvmet: listening on' 1 20 "$tgt" ||
	bad "the host's ndknvmet did not listen"
log=$out/console.log
: >"$log"
t0=$SECONDS
flock "$lock" "$ndkvm" run --quiet --timeout 900 --console-log "$log" \
	--hostfwd 14451:4430 \
	--file "$(readlink -f "$build/libndk.so.0"):/opt/ndk/libndk.so.0" \
	--file "$host_bin:/opt/ndk/ndknvme" --file "$tgt_bin:/opt/ndk/ndknvmet" \
	--file "$build/tools/ndkinfo:/opt/ndk/ndkinfo" \
	-- "$g" >"$out/guest.out" 2>&1 &
vm=$!
pids+=("$vm")

# The guest's target: the host's ndknvme on the software provider.
hv() { # NAME ARGS...
	local name=$1
	shift
	rc=0
	NDK_PROVIDER=software timeout 300 "$host_bin" --nqn "$nqn" -q 2 \
		127.0.0.1:14451 "$@" >"$out/$name.log" 2>&1 || rc=$?
	echo "$name-RC $rc" >>"$out/host-runs.txt"
	sed "s/^/  [$name] /" "$out/$name.log" | grep 'ndknvme: ' | tail -n 4
}
: >"$out/host-runs.txt"
if wait_for_lines "$log" '^NDKVM-LISTENING 4430' 1 600 "$vm"; then
	echo "== host ndknvme (software) -> guest ndknvmet (verbs, siw0)"
	hv B-ID -v id
	hv B-WRITE write 0 4096 --pattern 5
	hv B-VERIFY verify 0 4096 --pattern 5
	hv B-LOAD load --rw randrw --bs 65536 --qd 4 -D "$secs"
else
	bad "the guest's ndknvmet never listened"
fi
wait "$vm" || bad "ndkvm run: rc $?"
echo "guest: $(sed -n 's/^ndkvm: guest command exit status [0-9]*, //p' "$out/guest.out") in the guest, $((SECONDS - t0)) s with the wait for the lock"
kill -TERM "$tgt" 2>/dev/null || true
wait "$tgt" || bad "the host's ndknvmet exited $?"
tr -d '\r' <"$log" >"$out/console.txt"
c=$out/console.txt
sed -n '/^NDKVM-BEGIN$/,/^NDKVM-END$/p' "$c" | sed '1d;$d' | sed 's/^/  [guest] /'
sed 's/^/  [host target] /' "$out/host-ndknvmet.log" | tail -n 12

rc_of() { sed -n "s/^$1-RC \([0-9]*\)$/\1/p" "$c" "$out/host-runs.txt" | tail -n1; }
want() { # NAME RC WHAT
	local got
	got=$(rc_of "$1")
	if [[ $got == "$2" ]]; then
		echo "PASS $1: $3"
	else
		bad "$1 ($3): exit ${got:-?}, want $2"
		# Its own last lines here too: the output's end is what a
		# CI log keeps.
		if [[ -e $out/$1.log ]]; then
			tail -n 12 "$out/$1.log"
		else
			grep "^$1: " "$c" | tail -n 12
		fi | sed 's/^/    /'
	fi
}
want A-ID 0 "guest ndknvme (verbs, siw0) -> host ndknvmet: id"
want A-WRITE1 0 "write LBA 0 +2048"
want A-VERIFY1 0 "verify LBA 0 +2048"
want A-WRITE2 0 "write LBA 100003 +777"
want A-VERIFY2 0 "verify LBA 100003 +777"
want A-WRONG 4 "verify with the wrong pattern fails (a data mismatch)"
want A-LOAD 0 "verified randrw load"
want A-BADCMD 0 "badcmd"
want B-ID 0 "host ndknvme (software) -> guest ndknvmet (verbs, siw0): id"
want B-WRITE 0 "write LBA 0 +4096"
want B-VERIFY 0 "verify LBA 0 +4096"
want B-LOAD 0 "verified randrw load, 64 KiB"
grep -q '^GUEST-TARGET-RC 0$' "$c" || bad "the guest's ndknvmet did not exit 0"
if grep -q '^KNVME-CONNECT 0$' "$c"; then
	echo "PASS guest kernel nvme-rdma -> guest ndknvmet (siw0 loopback): connect"
else
	bad "guest kernel nvme-rdma -> guest ndknvmet: $(grep '^KNVME-CONNECT' "$c" || echo 'not run')"
fi
for bs in 4k 128k; do
	grep -q "^KNVME-DD $bs ok$" "$c" && echo "PASS kernel dd $bs, read back and compared" ||
		bad "kernel dd $bs: $(grep "^KNVME-DD $bs" "$c")"
done
grep -q '^KNVME-DISCONNECT 0$' "$c" || bad "nvme disconnect"
want C-ID 0 "guest ndknvme (verbs, rxe0) -> guest nvmet-rdma: id"
want C-WRITE 0 "write LBA 5000 +1000"
want C-VERIFY 0 "verify LBA 5000 +1000"
want C-LOAD 0 "verified randrw load"
want C-FR-WRITE 0 "fast-registered, remotely invalidated: write LBA 7000 +1000"
want C-FR-VERIFY 0 "fast-registered: verify LBA 7000 +1000"
want C-FR-LOAD 0 "fast-registered: verified randrw load, 64 KiB"
# What rxe said about windows (its dynamic debug above) and counted, at
# the end where a CI log keeps it.
if [[ $(rc_of C-FR-LOAD) != 0 ]]; then
	echo "rxe's counters after the fast-registered load:"
	grep "^RXE-COUNTER " "$c" | sed 's/^RXE-COUNTER /    /'
fi
if grep -q " mw#" "$c"; then
	echo "rxe on memory windows:"
	grep " mw#" "$c" | tail -n 12 | sed 's/^/    /'
fi
if grep -q -e "kernel BUG" -e "WARNING:" "$c"; then
	bad "the guest kernel logged a BUG or WARNING"
	grep -A12 -e "kernel BUG" -e "WARNING:" "$c" | head -n 30 | sed 's/^/    /'
fi
if ((fail)); then
	echo "verbs-nvme: FAILED (logs in $out)"
	exit 1
fi
echo "verbs-nvme: passed (logs in $out)"
