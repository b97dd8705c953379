#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ndksmb with libndk's verbs provider against ksmbd over RoCE (rxe0 on the
# guest's eth0, in place of siw0), both inside one boot of the interop
# guest (tests/interop/vm/ndkvm): with no iWARP device, ksmbd listens for
# SMB Direct on 445. Random files of 1 byte to 64 MiB (to 1 MiB + 3 with
# SMB_SHORT=1) are put and got back with SMB2_CHANNEL_RDMA_V1_INVALIDATE,
# inline below 4 KiB and through the RDMA channel above, and compared in
# the guest: the server RDMA-Reads our WRITE data, RDMA-Writes our READ
# data and invalidates our fast registration by Send with Invalidate (a
# type 2 window on rxe: docs/verbs.md, Fast registration), which ndksmb
# counts ("invalidations remote N"). Then 1 MiB + 3 with
# SMB2_CHANNEL_RDMA_V1 (--no-invalidate: our own NdkInvalidate).
#
# No capture: client and server share rxe0's address, so rxe loops the
# packets back inside the device and none reaches a network interface.
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

# SMB_SHORT=1: fewer sizes; else 1 byte to 64 MiB, as siw-smb.sh's
# extended form.
sizes="1 4095 65537 1048579 8388609 16777216 33554435 67108864"
[[ ${SMB_SHORT:-0} == 1 ]] && sizes="1 4095 65537 1048579"
g='export LD_LIBRARY_PATH=/opt/ndk PATH=/opt/ndk:$PATH NDK_PROVIDER=verbs
export NDKSMB_PASSWORD=ndkpass NDK_RUNTIME_DIR=/tmp/ndk-rt
modload rdma_rxe >/dev/null
rdma link delete siw0
rdma link add rxe0 type rxe netdev eth0 || echo "GUEST-FAIL rxe0"
ksmbd-up || echo "GUEST-FAIL ksmbd-up"
# smb TAG SIZE [ndksmb options]: put, get back, compare.
smb() {
	t=$1 s=$2
	shift 2
	[ -f /tmp/f.$s ] || head -c $s /dev/urandom >/tmp/f.$s
	timeout 300 ndksmb -p 445 -u ndk "$@" 10.0.2.15 ndk put /tmp/f.$s $t.$s >/tmp/put.log 2>/tmp/put.err; p=$?
	sed "s/^/put $t $s: /" /tmp/put.log
	timeout 300 ndksmb -p 445 -u ndk "$@" 10.0.2.15 ndk get $t.$s /tmp/g.$s >/tmp/get.log 2>/tmp/get.err; r=$?
	sed "s/^/get $t $s: /" /tmp/get.log
	if [ $p = 0 ] && [ $r = 0 ] && cmp -s /tmp/f.$s /tmp/g.$s; then
		echo "RXE-SMB $t $s ok"
	else
		echo "RXE-SMB $t $s BAD put=$p get=$r"
		tail -3 /tmp/put.err /tmp/get.err
	fi
	rm -f /tmp/g.$s /srv/ndk/$t.$s
}
for s in '"$sizes"'; do
	smb inv $s
done
smb noinv 1048579 --no-invalidate
echo "==== dmesg"
dmesg | grep -e ksmbd -e rxe -e "kernel BUG" -e "WARNING:" -e "Call Trace"
'
siw_checks_begin
"$NDKVM" run --timeout 1200 --console-log "$out/console.log" \
	--file "$(readlink -f "$build/libndk.so.0"):/opt/ndk/libndk.so.0" \
	--file "$bin:/opt/ndk/ndksmb" \
	--file "$(readlink -f "$nettle"):/opt/ndk/$(basename "$nettle")" \
	--quiet -- "$g" >"$out/ndkvm.out" 2>&1 || bad "ndkvm run: rc $?"
tr -d '\r' <"$out/console.log" >"$out/console.txt"
mv "$out/console.txt" "$out/console.log"
grep -q "GUEST-FAIL" "$out/console.log" && bad "$(grep GUEST-FAIL "$out/console.log")"
nsizes=$(wc -w <<<"$sizes")
n=$(grep -c '^RXE-SMB inv [0-9]* ok$' "$out/console.log" || true)
grep '^RXE-SMB \|^put \|^get ' "$out/console.log" | sed 's/^/  /'
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
if grep -E "kernel BUG|WARNING:|Call Trace" "$out/console.log"; then
	bad "the guest kernel complained"
fi
if ((fail)); then
	echo "FAIL (logs in $out)"
	exit 1
fi
echo "PASS"
