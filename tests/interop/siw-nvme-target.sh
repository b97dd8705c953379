#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ndknvmet (tools/nvme) as the NVMe/RDMA target of Linux's nvme-rdma host
# on siw, in one boot of the interop guest (tests/interop/vm/ndkvm). The
# host runs ndknvmet with a RAM namespace on 127.0.0.1:PORT (the guest's
# 10.0.2.2); the guest:
#   1. nvme connect -t rdma with 2 I/O queues; nvme list, id-ctrl (the
#      fields Linux checks), id-ns, ns-descs
#   2. dd with O_DIRECT of an 8 MiB random pattern at 4k, 64k, 128k, 256k
#      and 1M, read back and compared (cmp), zeros in between; two writers
#      and two readers at once, one per CPU (so both I/O queues carry
#      data); Write Zeroes, Flush and a discard (DSM) with nvme-cli and
#      blkdiscard; smart-log, get-feature, error-log, fw-log
#   3. nvme disconnect: the target must log the I/O queues, the shutdown
#      (CC.SHN) and the admin queue going, and free the controller
#   4. a Connect to a subsystem we do not serve: refused (Connect Invalid
#      Parameters, the subsystem NQN), the one command error expected
#   5. a host that vanishes: connect again (one I/O queue, SQ flow
#      control disabled), then drop every packet the guest sends (netem
#      loss 100%); the target must expire the controller with its
#      keep-alive timer and end its queues by itself
# Then SIGTERM: ndknvmet must exit 0 with that one command error, and
# its counters must cover what the guest moved. The capture of the guest
# NIC is checked with siw_check_pcap and walked FPDU by FPDU
# (mpa-walk.py), which must find our RDMA Read Requests, RDMA Writes and
# Sends with Invalidate.
#
#   siw-nvme-target.sh BUILD_DIR [OUT_DIR]      exit 0 pass, 1 fail, 77 skip
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: siw-nvme-target.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ndk-siw-nvme-target.XXXXXX)}
. "$here/siw-lib.sh"
siw_find_harness "$top"
bin=$build/tools/ndknvmet
[[ -x $bin ]] || { echo "no $bin"; exit 1; }
mkdir -p "$out"
rm -f "$out"/*
echo "logs in $out"
siw_checks_begin

port=${NDK_NVMET_PORT:-14420}
nqn=nqn.2024-01.io.libndk:siw-nvme-target
# NVME_MIB: the pattern size; CTest runs 2 MiB, the full run 8.
mib=${NVME_MIB:-8}
sizes="4k 64k 128k 256k 1M"

g='N='$nqn' P='$port' MIB='$mib' SIZES="'$sizes'"
bytes() { case $1 in *k) echo $((${1%k} * 1024)) ;; *M) echo $((${1%M} * 1048576)) ;; esac; }
# nvme-rdma waits for the CM without a limit of its own: ours is 60 s, and
# a failed connect shows what the kernel logged, at once.
nvme_connect() {
	timeout 60 nvme connect -t rdma -a 10.0.2.2 -s $P "$@"; c=$?
	[ $c = 0 ] || dmesg | tail -n 15 | sed "s/^/CONNECT-DMESG /"
	return $c
}
nvme_connect -n $N -i 2; echo "NVMET-CONNECT $?"
for i in $(seq 40); do [ -b /dev/nvme0n1 ] && break; sleep 0.25; done
nvme list
nvme id-ctrl /dev/nvme0 >/tmp/idctrl; cat /tmp/idctrl | sed "s/^/ID-CTRL /"
nvme id-ns /dev/nvme0n1 | grep -E "^(nsze|ncap|nmic|nguid|lbaf)" | sed "s/^/ID-NS /"
nvme ns-descs /dev/nvme0n1 | sed "s/^/NS-DESCS /"
echo "NVMET-QUEUES $(cat /sys/class/nvme/nvme0/queue_count) MAXKB $(cat /sys/block/nvme0n1/queue/max_hw_sectors_kb)"
dd if=/dev/urandom of=/tmp/pat bs=1M count=$MIB 2>/dev/null
for bs in $SIZES; do
	n=$((MIB * 1048576 / $(bytes $bs)))
	dd if=/tmp/pat of=/dev/nvme0n1 bs=$bs count=$n oflag=direct 2>/dev/null; w=$?
	dd if=/dev/nvme0n1 of=/tmp/back bs=$bs count=$n iflag=direct 2>/dev/null; r=$?
	if [ $w = 0 ] && [ $r = 0 ] && cmp -s /tmp/pat /tmp/back; then echo "NVMET-DD $bs ok"; else echo "NVMET-DD $bs BAD w=$w r=$r"; fi
	dd if=/dev/zero of=/dev/nvme0n1 bs=1M count=$MIB oflag=direct 2>/dev/null
done
taskset 1 dd if=/tmp/pat of=/dev/nvme0n1 bs=64k oflag=direct 2>/dev/null &
taskset 2 dd if=/tmp/pat of=/dev/nvme0n1 bs=128k seek=$((MIB * 8)) oflag=direct 2>/dev/null &
wait
taskset 2 dd if=/dev/nvme0n1 of=/tmp/b1 bs=1M count=$MIB iflag=direct 2>/dev/null &
taskset 1 dd if=/dev/nvme0n1 of=/tmp/b2 bs=1M skip=$MIB count=$MIB iflag=direct 2>/dev/null &
wait
if cmp -s /tmp/pat /tmp/b1 && cmp -s /tmp/pat /tmp/b2; then echo "NVMET-DD parallel ok"; else echo "NVMET-DD parallel BAD"; fi
md5sum /tmp/pat /tmp/b1 /tmp/b2
nvme write-zeroes /dev/nvme0n1 -s 0 -c 2047; echo "NVMET-WZ $?"
dd if=/dev/nvme0n1 of=/tmp/z bs=1M count=1 iflag=direct 2>/dev/null
dd if=/dev/zero of=/tmp/z0 bs=1M count=1 2>/dev/null
if cmp -s /tmp/z /tmp/z0; then echo "NVMET-WZ-READ ok"; else echo "NVMET-WZ-READ BAD"; fi
nvme flush /dev/nvme0n1; echo "NVMET-FLUSH $?"
blkdiscard /dev/nvme0n1; echo "NVMET-DISCARD $?"
nvme smart-log /dev/nvme0 | sed "s/^/SMART /"
nvme get-feature -f 7 /dev/nvme0; nvme get-feature -f 0xf /dev/nvme0
nvme get-feature -f 0xf -s 3 /dev/nvme0 | sed "s/^/NVMET-KATO-CAPS /"
nvme error-log /dev/nvme0 >/dev/null; echo "NVMET-ERRLOG $?"
nvme fw-log /dev/nvme0 | grep frs1
nvme disconnect -n $N; echo "NVMET-DISCONNECT $?"
sleep 1
[ -e /dev/nvme0 ] && echo "NVMET-STILL-THERE"
timeout 60 nvme connect -t rdma -a 10.0.2.2 -s $P -n $N.not-here -i 1; echo "NVMET-WRONG-NQN $?"
modload sch_netem >/dev/null 2>&1
nvme_connect -n $N -i 1 -k 4 --disable-sqflow; echo "NVMET-CONNECT2 $?"
for i in $(seq 40); do [ -b /dev/nvme0n1 ] && break; sleep 0.25; done
dd if=/dev/nvme0n1 of=/tmp/b3 bs=1M skip=$MIB count=$MIB iflag=direct 2>/dev/null
if cmp -s /tmp/pat /tmp/b3; then echo "NVMET-DD reconnect ok"; else echo "NVMET-DD reconnect BAD"; fi
tc qdisc add dev eth0 root netem loss 100%; echo "NVMET-VANISHED"
# KATO 4 s, and KAS (1 s) of grace: the target gives up within 5 s.
sleep 12
echo "==== dmesg"; dmesg | grep -i -e nvme -e "kernel BUG" -e "WARNING:" -e "Call Trace" | tail -30
'
"$bin" -b 127.0.0.1 -p "$port" --nqn "$nqn" --ram 64m -q 4 >"$out/ndknvmet.log" 2>&1 &
tgt=$!
pids+=("$tgt")
wait_for_lines "$out/ndknvmet.log" '^ndknvmet: listening on' 1 20 "$tgt" ||
	bad "ndknvmet did not listen"
"$NDKVM" run --timeout 400 --console-log "$out/console.log" \
	--pcap "$out/guest.pcap" --quiet -- "$g" >"$out/ndkvm.out" 2>&1 ||
	siw_vm_failed $? "$out/ndkvm.out"
tr -d '\r' <"$out/console.log" >"$out/console.txt"
mv "$out/console.txt" "$out/console.log"
# The vanished host's controller goes by its keep-alive timer.
wait_for_lines "$out/ndknvmet.log" '^ndknvmet: ctrl 2: freed' 1 30 "$tgt" ||
	bad "the vanished host's controller was not freed"
kill -TERM "$tgt"
rc=0
wait "$tgt" || rc=$?
((rc == 0)) || bad "ndknvmet exited $rc"
sed 's/^/  [target] /' "$out/ndknvmet.log"
grep -E '^NVMET-|^ID-CTRL (mn|sgls|ioccsz|iorcsz|msdbd|kas|cntlid|maxcmd) |^ID-NS nsze|kernel BUG|WARNING:' \
	"$out/console.log" | sed 's/^/  [guest] /'

c=$out/console.log
t=$out/ndknvmet.log
grep -q '^NVMET-CONNECT 0$' "$c" || bad "nvme connect failed"
grep -q "^/dev/nvme0n1 .*libndk ndknvmet" "$c" || bad "nvme list does not show the namespace"
idf() { sed -n "s/^ID-CTRL $1 *: *//p" "$c" | tr -d ' '; }
[[ $(idf mn) == libndkndknvmet ]] || bad "id-ctrl mn: $(idf mn)"
[[ $(idf subnqn) == "$nqn" ]] || bad "id-ctrl subnqn: $(idf subnqn)"
[[ $(idf cntlid) == 0x1 ]] || bad "id-ctrl cntlid: $(idf cntlid)"
[[ $(idf sqes) == 0x66 && $(idf cqes) == 0x44 ]] || bad "id-ctrl sqes/cqes"
[[ $(idf ioccsz) == 4 && $(idf iorcsz) == 1 && $(idf msdbd) == 1 ]] ||
	bad "id-ctrl ioccsz/iorcsz/msdbd: $(idf ioccsz)/$(idf iorcsz)/$(idf msdbd)"
[[ $(idf kas) == 10 && $(idf nn) == 1 && $(idf maxcmd) == 128 ]] ||
	bad "id-ctrl kas/nn/maxcmd"
[[ $(idf mdts) == 5 && $(idf ver) == 0x10300 ]] || bad "id-ctrl mdts/ver"
[[ $(idf sgls) =~ ^(0x)?5$ ]] || bad "id-ctrl sgls: $(idf sgls)"
grep -q '^ID-NS nsze *: 0x20000$' "$c" || bad "id-ns nsze is not 131072 blocks"
grep -q '^ID-NS lbaf *0 : ms:0 *lbads:9' "$c" || bad "id-ns lbaf 0 is not 512 bytes"
grep -q '^NS-DESCS uuid' "$c" || bad "ns-descs: no UUID"
grep -q '^NVMET-QUEUES 3 MAXKB 128$' "$c" || bad "not 2 I/O queues of 128 KiB transfers"
for bs in $sizes parallel reconnect; do
	grep -q "^NVMET-DD $bs ok$" "$c" || bad "dd $bs: data differ"
done
for s in WZ FLUSH DISCARD ERRLOG DISCONNECT CONNECT2; do
	grep -q "^NVMET-$s 0$" "$c" || bad "NVMET-$s did not exit 0"
done
grep -q '^NVMET-WRONG-NQN 0$' "$c" && bad "a Connect to another subsystem succeeded"
grep -q 'Connect to unknown subsystem' "$t" || bad "target: no refused Connect"
grep -q '^NVMET-KATO-CAPS .*0x0*4$' "$c" || bad "get-feature -s 3: KATO not changeable"
grep -q '^NVMET-WZ-READ ok$' "$c" || bad "Write Zeroes: the blocks do not read as zeros"
grep -q '^NVMET-STILL-THERE' "$c" && bad "nvme0 still there after nvme disconnect"
grep -q -e 'kernel BUG' -e 'WARNING:' -e 'Call Trace' "$c" && bad "guest kernel BUG/WARNING"

grep -q '^ndknvmet: ctrl 1: I/O queue 2 connected' "$t" || bad "target: no I/O queue 2"
grep -q '^ndknvmet: ctrl 1: shutdown (CC.SHN 1)' "$t" || bad "target: no shutdown"
grep -q '^ndknvmet: ctrl 1: admin queue disconnected (host disconnected; .* 0 errors' "$t" ||
	bad "target: admin queue of ctrl 1 did not end cleanly"
(($(grep -c '^ndknvmet: ctrl 1: I/O queue [12] disconnected (host disconnected; .* 0 errors' "$t") == 2)) ||
	bad "target: the I/O queues of ctrl 1 did not end cleanly"
grep -q '^ndknvmet: ctrl 2: keep-alive timeout' "$t" || bad "target: no keep-alive timeout for ctrl 2"
grep -q '^ndknvmet: ctrl 2: admin queue disconnected (keep-alive timeout' "$t" ||
	bad "target: ctrl 2's admin queue did not end on the keep-alive timeout"
grep -q 'never completed' "$t" && bad "target: requests never completed"
ex=" $(sed -n 's/^ndknvmet: exit: //p' "$t")"
[[ -n ${ex// /} ]] || bad "target: no exit counters"
n() { sed -n "s/.*[ ,]\([0-9]*\) $1.*/\1/p" <<<"$ex"; }
[[ $(n errors) == 1 ]] || bad "target: $(n errors) command errors, not 1"
[[ $(n controllers) == 2 ]] || bad "target: $(n controllers) controllers, not 2"
[[ $(n 'keep-alive') == 1 ]] || bad "target: $(n 'keep-alive') keep-alive expiries, not 1"
wr=$(sed -n 's/.*written \([0-9]*\) bytes.*/\1/p' <<<"$ex")
rd=$(sed -n 's/.*read \([0-9]*\) bytes.*/\1/p' <<<"$ex")
# Each size writes the pattern and zeros; the parallel step two patterns.
want_wr=$(((2 * 5 + 2) * mib * 1048576))
want_rd=$(((5 + 3) * mib * 1048576))
((wr >= want_wr)) || bad "target: $wr bytes written, expected at least $want_wr"
((rd >= want_rd)) || bad "target: $rd bytes read, expected at least $want_rd"

# siw_check_pcap's tshark finds FPDUs segment by segment and loses them
# where slirp cut our 32 KiB FPDUs (libndk on lo) into the guest's
# 1440-byte segments: a few segments after bulk data stay undecoded. mpa-walk.py
# follows the MPA lengths through every byte of every stream instead.
pc_rc=0
pc=$(siw_check_pcap "$out/guest.pcap") || pc_rc=$?
echo "$pc"
if command -v tshark >/dev/null; then
	python3 "$here/mpa-walk.py" "$out/guest.pcap" "$port" >"$out/mpa-walk.txt" ||
		bad "pcap: a stream does not walk FPDU by FPDU"
	sed 's/^/  [pcap] /' "$out/mpa-walk.txt"
	# Read data goes out as RDMA Writes, write data is fetched with RDMA
	# Read Requests, CQEs of commands with data are Sends with Invalidate.
	for op in Write 'Read Request' 'Send with Invalidate'; do
		grep 'from the target' "$out/mpa-walk.txt" | grep -q "$op [1-9]" ||
			bad "pcap: no $op from the target"
	done
	# Where tshark lost an FPDU boundary it may also call a frame
	# malformed (a BoundError in the middle of bulk data, 0-1 per run);
	# the walk above has followed that stream through every byte, so
	# only a bad CRC fails here.
	if ((pc_rc)); then
		grep -q ', 0 Bad CRC32' <<<"$pc" || bad "capture: bad CRCs"
		echo "NOTE: tshark's heuristic lost FPDU boundaries; mpa-walk.py accounts for every byte"
	fi
fi
if ((fail)); then
	echo "FAIL: logs in $out"
	exit 1
fi
echo "PASS: nvme-rdma on siw against ndknvmet: connect, identify, dd 4k..1M compared, parallel queues, write zeroes, flush, discard, disconnect, keep-alive expiry"
[[ -n ${2:-} ]] || rm -rf "$out"
