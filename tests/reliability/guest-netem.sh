#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Delay, jitter and reordering, which need netem (this host's kernel has
# none): an ndkstress client in the interop guest (ndkvm), whose Debian
# kernel has sch_netem, against an ndkstress server on the host, while
# netem on the guest's NIC delays every packet 20 ms +- 5 ms and sends 25%
# of them at once, out of order. Everything else of the fault matrix runs
# between namespaces (faults.sh).
#
# The guest reaches the host as 10.0.2.2 through qemu's user-mode network
# (slirp), which terminates the guest's TCP: netem shapes the guest's own
# TCP stream, which is the one libndk in the guest reads and writes.
# Carried into the guest: ndkstress and libndk.so.0 from BUILD_DIR. The guest is emulated (TCG): the
# figures are about correctness, not speed.
#
# usage: tests/reliability/guest-netem.sh BUILD_DIR [SECONDS] [OUT_DIR]
#   MAX_SIZE: the largest Write or Read (default 4m, as in faults.sh;
#   CTest's short form uses 64k, the emulated CPU being slow).
# Exit 0 pass, 1 fail, 77 skip (no harness, no image, no tc).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: guest-netem.sh BUILD_DIR [SECONDS] [OUT_DIR]}" && pwd)
secs=${2:-60}
out=${3:-$(mktemp -d /tmp/ndk-guest-netem.XXXXXX)}
port=18617
max_size=${MAX_SIZE:-4m}
. "$top/tests/interop/siw-lib.sh"
siw_find_harness "$top"

stress=$build/tools/perf/ndkstress
lib=$(readlink -f "$build/libndk.so.0")
[[ -x $stress && -e $lib ]] || { echo "no $stress or $lib"; exit 1; }
# The guest has tc (iproute2) and sch_netem (modload); only the client and
# the library are carried in.
files=(--file "$stress:/opt/ndk/ndkstress" --file "$lib:/opt/ndk/lib/libndk.so.0")

export NDK_LOG=error
"$stress" -s -b 127.0.0.1 -p $port >"$out/server.log" 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
sleep 0.5

# The guest: netem on eth0, then the client; its JSON summary and exit
# status go to the console between markers. eth0 has siw0, which the
# verbs provider would take: this test is of the software provider.
g="modload sch_netem
export LD_LIBRARY_PATH=/opt/ndk/lib NDK_LOG=error NDK_PROVIDER=software
mkdir -p /dev/shm
tc qdisc add dev eth0 root netem delay 20ms 5ms reorder 25% 50%
tc qdisc show dev eth0
echo STRESS-BEGIN
/opt/ndk/ndkstress -j -D $secs -S $max_size 10.0.2.2:$port
echo STRESS-RC \$?"
rc=0
"$NDKVM" run --timeout $((secs + 600)) --console-log "$out/console.log" \
	"${files[@]}" --quiet -- "$g" >"$out/ndkvm.out" 2>&1 || rc=$?
tr -d '\r' <"$out/console.log" >"$out/console.txt"
grep -m1 'qdisc netem' "$out/console.txt" || { echo "FAIL: netem not set up (see $out/console.txt)"; exit 1; }
json=$(sed -n '/^STRESS-BEGIN/,/^STRESS-RC/p' "$out/console.txt" | grep '^{' | tail -1)
src=$(sed -n 's/^STRESS-RC \([0-9]*\)$/\1/p' "$out/console.txt" | tail -1)
echo "guest client: $json"
echo "guest ndkstress exit: ${src:-none} (ndkvm run: $rc)"
[[ -n $json && ${src:-1} == 0 ]] || { echo "FAIL (logs in $out)"; exit 1; }
python3 - "$json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
ok = (d["mismatches"] == 0 and d["unknown_completions"] == 0 and
      d["posted"] == d["completed"] and d["send"] + d["write"] + d["read"] > 0)
print("guest-netem: %s: %d operations, %.1f MB checked, %d wrong, %d/%d "
      "requests completed" % ("held" if ok else "FAILED",
                              d["send"] + d["write"] + d["read"],
                              d["bytes_verified"] / 1e6, d["mismatches"],
                              d["completed"], d["posted"]))
sys.exit(0 if ok else 1)
PY
