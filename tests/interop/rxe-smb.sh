#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ndksmb with libndk's verbs provider against ksmbd over RoCE, both inside
# one boot of the interop guest (tests/interop/vm/ndkvm): with no iWARP
# device, ksmbd listens for SMB Direct on 445. Random files of 1 byte to
# 64 MiB (to 1 MiB + 3 with SMB_SHORT=1) are put and got back with
# SMB2_CHANNEL_RDMA_V1_INVALIDATE, inline below 4 KiB and through the RDMA
# channel above, and compared in the guest: the server RDMA-Reads our
# WRITE data, RDMA-Writes our READ data and invalidates our fast
# registration by Send with Invalidate (a type 2 window on rxe:
# docs/verbs.md, Fast registration), which ndksmb counts ("invalidations
# remote N"). Then 1 MiB + 3 with SMB2_CHANNEL_RDMA_V1 (--no-invalidate:
# our own NdkInvalidate), and 4 MiB + 3 in 64 KiB requests, 16 in flight
# (--queue-depth 16), each invalidated by the server.
#
# Client and server are two rxe devices on the two ends of a veth pair
# (10.9.0.1 on va, 10.9.0.2 on vb; siw0 deleted): rxe loops back inside
# the device the packets between two of its own addresses, so one device
# would put nothing on a link. Policy routing sends each end's traffic
# for the other out of its own veth (the local table after two rules
# for locally made packets, accept_local). The frames of a 64 KiB + 1 put
# and get on va are captured (pkt_dump.c, built here: the guest has no
# tcpdump) and decoded with the host's tshark (RoCEv2, UDP 4791): SMB
# Direct negotiation, SMB2 WRITE and READ with the RDMA_V1_INVALIDATE
# channel, the server's RDMA Read Request and RDMA Write against the
# tokens they carry, and a Send with Invalidate naming each.
#
#   rxe-smb.sh BUILD_DIR [OUT_DIR]      exit 0 pass, 1 fail, 77 skip
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: rxe-smb.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ndk-rxe-smb.XXXXXX)}
. "$here/siw-lib.sh"
siw_find_harness "$top"
bin=$build/tools/ndksmb
[[ -x $bin && -e $build/libndk.so.0 ]] || {
	echo "SKIP: no $bin or libndk.so.0 (nettle missing?)"
	exit 77
}
nettle=$(ldd "$bin" | awk '$1 ~ /^libnettle/ { print $3 }')
[[ -n $nettle ]] || {
	echo "SKIP: cannot find the libnettle ndksmb uses"
	exit 77
}
cache=${NDKVM_CACHE:-/var/tmp/ndkvm}
zcat "$cache/initrd.gz" | cpio -it --quiet 2>/dev/null |
	grep -q '^usr/local/bin/ksmbd-up$' || {
	echo "SKIP: the interop guest has no ksmbd (siw-smb.sh rebuilds it)"
	exit 77
}
mkdir -p "$out"
rm -rf "${out:?}"/*
echo "logs in $out"
dump=$out/pkt_dump
if ! ${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -Werror "$here/pkt_dump.c" \
	-o "$dump" >"$out/pkt_dump-build.log" 2>&1; then
	cat "$out/pkt_dump-build.log"
	dump=
fi

# SMB_SHORT=1: fewer sizes; else 1 byte to 64 MiB, as siw-smb.sh's
# extended form.
sizes="1 4095 65537 1048579 8388609 16777216 33554435 67108864"
[[ ${SMB_SHORT:-0} == 1 ]] && sizes="1 4095 65537 1048579"
g='export LD_LIBRARY_PATH=/opt/ndk PATH=/opt/ndk:$PATH NDK_PROVIDER=verbs
export NDKSMB_PASSWORD=ndkpass NDK_RUNTIME_DIR=/tmp/ndk-rt
modload rdma_rxe >/dev/null
rdma link delete siw0
ip link add va type veth peer name vb || echo "GUEST-FAIL veth"
ip addr add 10.9.0.1/24 dev va
ip addr add 10.9.0.2/24 dev vb
ip link set va up
ip link set vb up
for i in all default va vb; do
	echo 1 >/proc/sys/net/ipv4/conf/$i/accept_local
	echo 0 >/proc/sys/net/ipv4/conf/$i/rp_filter
done
ip rule add pref 10 iif lo to 10.9.0.2 lookup 100
ip rule add pref 11 iif lo to 10.9.0.1 lookup 101
ip route add 10.9.0.2 dev va src 10.9.0.1 table 100
ip route add 10.9.0.1 dev vb src 10.9.0.2 table 101
ip rule add pref 100 lookup local
ip rule del pref 0
ip route get 10.9.0.2 | grep -q "dev va" || echo "GUEST-FAIL routes"
rdma link add rxea type rxe netdev va || echo "GUEST-FAIL rxea"
rdma link add rxeb type rxe netdev vb || echo "GUEST-FAIL rxeb"
ksmbd-up || echo "GUEST-FAIL ksmbd-up"
# smb TAG SIZE [ndksmb options]: put, get back, compare.
smb() {
	t=$1 s=$2
	shift 2
	[ -f /tmp/f.$s ] || head -c $s /dev/urandom >/tmp/f.$s
	timeout 300 ndksmb -p 445 -u ndk "$@" 10.9.0.2 ndk put /tmp/f.$s $t.$s >/tmp/put.log 2>/tmp/put.err; p=$?
	sed "s/^/put $t $s: /" /tmp/put.log
	timeout 300 ndksmb -p 445 -u ndk "$@" 10.9.0.2 ndk get $t.$s /tmp/g.$s >/tmp/get.log 2>/tmp/get.err; r=$?
	sed "s/^/get $t $s: /" /tmp/get.log
	cat /tmp/put.err /tmp/get.err | grep "connecting again" | sed "s/^/RXE-SMB-RETRY $t $s: /"
	if [ $p = 0 ] && [ $r = 0 ] && cmp -s /tmp/f.$s /tmp/g.$s; then
		echo "RXE-SMB $t $s ok"
	else
		echo "RXE-SMB $t $s BAD put=$p get=$r"
		tail -3 /tmp/put.err /tmp/get.err
	fi
	rm -f /tmp/g.$s /srv/ndk/$t.$s
}
if [ -x /opt/ndk/pkt_dump ]; then
	pkt_dump va /tmp/roce.pcap &
	d=$!
	sleep 1
	smb cap 65537
	kill $d
	wait $d
	echo "==== pcap"
	base64 /tmp/roce.pcap
	echo "==== end of pcap"
fi
for s in '"$sizes"'; do
	smb inv $s
done
smb noinv 1048579 --no-invalidate
smb qd 4194307 --queue-depth 16 --io-size 64k
echo "==== dmesg"
dmesg | grep -e ksmbd -e rxe -e "kernel BUG" -e "WARNING:" -e "Call Trace"
'
files=()
[[ -n $dump ]] && files+=(--file "$dump:/opt/ndk/pkt_dump")
siw_checks_begin
"$NDKVM" run --timeout 1200 --console-log "$out/console.log" \
	--file "$(readlink -f "$build/libndk.so.0"):/opt/ndk/libndk.so.0" \
	--file "$bin:/opt/ndk/ndksmb" \
	--file "$(readlink -f "$nettle"):/opt/ndk/$(basename "$nettle")" \
	"${files[@]}" --quiet -- "$g" >"$out/ndkvm.out" 2>&1 || siw_vm_failed $? "$out/ndkvm.out"
tr -d '\r' <"$out/console.log" >"$out/console.txt"
mv "$out/console.txt" "$out/console.log"
grep -q "GUEST-FAIL" "$out/console.log" && bad "$(grep GUEST-FAIL "$out/console.log")"
nsizes=$(wc -w <<<"$sizes")
n=$(grep -c '^RXE-SMB inv [0-9]* ok$' "$out/console.log" || true)
grep '^RXE-SMB \|^RXE-SMB-RETRY \|^put \|^get ' "$out/console.log" | sed 's/^/  /'
((n == nsizes)) || bad "$n of $nsizes sizes went through rxe with the server's invalidation"
grep -q '^RXE-SMB noinv 1048579 ok$' "$out/console.log" ||
	bad "no 1 MiB round trip with --no-invalidate"
# Through the RDMA channel, every registration invalidated by the
# server's Send with Invalidate (our own NdkInvalidate with
# --no-invalidate).
grep -q '^put inv 65537: .*RDMA reads 0 writes 1,.*invalidations remote 1 local 0' "$out/console.log" ||
	bad "put 65537: not one RDMA-read WRITE with remote invalidation"
grep -q '^get inv 65537: .*RDMA reads 1 writes 0,.*invalidations remote 1 local 0' "$out/console.log" ||
	bad "get 65537: not one RDMA-written READ with remote invalidation"
for s in 8388609 67108864; do
	[[ " $sizes " == *" $s "* ]] || continue
	k=$((s >> 20))
	grep -q "^get inv $s: .*RDMA reads $k writes 0,.*invalidations remote $k local 0" "$out/console.log" ||
		bad "get $s: not $k READs through the RDMA channel, each invalidated remotely"
	grep -q "^put inv $s: .*RDMA reads 0 writes $k,.*invalidations remote $k local 0" "$out/console.log" ||
		bad "put $s: not $k WRITEs through the RDMA channel, each invalidated remotely"
done
grep -q '^get noinv 1048579: .*invalidations remote 0 local [1-9]' "$out/console.log" ||
	bad "--no-invalidate: not our own Invalidate"
# 16 READs or WRITEs in flight, each with its own registration (a type 2
# window on rxe), every one invalidated by the server; the last 3 bytes
# inline.
grep -q '^RXE-SMB qd 4194307 ok$' "$out/console.log" ||
	bad "no 4 MiB + 3 round trip with --queue-depth 16"
grep -q '^get qd 4194307: .*RDMA reads 64 writes 0, inline reads 1 writes 0, invalidations remote 64 local 0' "$out/console.log" ||
	bad "get --queue-depth 16: not 64 READs through the RDMA channel, each invalidated remotely"
grep -q '^put qd 4194307: .*RDMA reads 0 writes 64, inline reads 0 writes 1, invalidations remote 64 local 0' "$out/console.log" ||
	bad "put --queue-depth 16: not 64 WRITEs through the RDMA channel, each invalidated remotely"
# The capture (RoCEv2 as the host's tshark decodes it): no malformed
# frame but ksmbd's NEGOTIATE response (a SPNEGO hint tshark calls
# malformed, as in siw-smb.sh) and the payload of RDMA Write and Read
# Response packets (BTH opcodes 6-11, 13-16): that is file data, which
# tshark 4.0 tries to decode when it is short (the 1-byte last packet of
# a 4 MiB + 3 transfer came out as a malformed IDP frame, once in CI);
# both negotiate messages; WRITE and READ
# with the RDMA_V1_INVALIDATE channel (2); for the WRITE's token an RDMA
# Read Request (BTH opcode 12) and for the READ's an RDMA Write (6 first,
# 10 only) with that R_Key, and for each a Send with Invalidate (22 last,
# 23 only) whose IETH names it.
rxe_check_pcap() {
	local p=$out/roce.pcap f n tok h
	sed -n '/^==== pcap$/,/^==== end of pcap$/p' "$out/console.log" |
		sed '1d;$d' | base64 -d >"$p" 2>/dev/null || true
	if [[ -z $dump ]]; then
		echo "  pcap: pkt_dump did not build, not captured"
		return 0
	fi
	[[ -s $p ]] || { bad "pcap: no capture from the guest"; return; }
	command -v tshark >/dev/null || {
		echo "  pcap: tshark missing, not checked"
		return 0
	}
	# -1 when tshark refuses the filter (checked on an empty capture):
	# every check below then fails. tshark's exit status on the capture
	# itself says nothing of the filter (a capture cut short, as one
	# stopped mid-packet is, also exits 2), so it is not looked at.
	count() {
		siw_tshark_filter_ok "$1" >&2 || { echo -1; return; }
		tshark -r "$p" -Y "$1" 2>/dev/null | grep -c . || true
	}
	n=$(count '_ws.malformed && !(smb2.cmd == 0 && smb2.flags.response == 1) && !((infiniband.bth.opcode >= 6 && infiniband.bth.opcode <= 11) || (infiniband.bth.opcode >= 13 && infiniband.bth.opcode <= 16))')
	((n == 0)) || bad "pcap: $n malformed frames"
	for f in smb_direct.negotiate_request smb_direct.negotiate_response \
		'smb2.cmd == 9 && smb2.channel == 2' 'smb2.cmd == 8 && smb2.channel == 2'; do
		n=$(count "$f")
		echo "  pcap: $n frames with $f"
		((n > 0)) || bad "pcap: no $f"
	done
	for f in '9 12 RDMA-Read-Request' '8 6||10 RDMA-Write'; do
		set -- $f
		tok=$(tshark -r "$p" -Y "smb2.cmd == $1 && smb2.flags.response == 0 && smb2.channel == 2" \
			-T fields -e smb2.buffer_descriptor.token 2>/dev/null | head -1)
		[[ -n $tok ]] || { bad "pcap: no token in an SMB2 command $1"; continue; }
		n=$(count "(infiniband.bth.opcode == ${2//||/ || infiniband.bth.opcode == }) && infiniband.reth.r_key == $tok")
		echo "  pcap: token $tok of SMB2 command $1: $n ${3//-/ } frames"
		((n > 0)) || bad "pcap: no ${3//-/ } with R_Key $tok"
		# The IETH is a byte string to tshark: 0x08000129 is 08:00:01:29.
		h=$(printf '%08x' "$tok" | sed 's/../&:/g; s/:$//')
		n=$(count "(infiniband.bth.opcode == 22 || infiniband.bth.opcode == 23) && infiniband.ieth == $h")
		echo "  pcap: token $tok: $n Send with Invalidate frames"
		((n > 0)) || bad "pcap: no Send with Invalidate of $tok"
	done
}
rxe_check_pcap
if grep -E "kernel BUG|WARNING:|Call Trace" "$out/console.log"; then
	bad "the guest kernel complained"
fi
if ((fail)); then
	echo "FAIL (logs in $out)"
	exit 1
fi
echo "PASS"
