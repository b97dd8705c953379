#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The functional suites (tests/func) with the verbs provider, inside the
# interop guest (tests/interop/vm/ndkvm): every test executable of
# BUILD_DIR runs there with NDK_PROVIDER=verbs on eth0 (10.0.2.15, and
# fd00::15 for IPv6), whose RDMA device is siw0, or rxe0 with --rxe. Lo
# cannot carry rdma_cm there: a device attached to lo has an all-zero GID,
# which the kernel's GID cache drops (docs/verbs.md, Devices).
#
#   verbs-guest.sh BUILD_DIR [--rxe] [--timeout S] [TEST...]
#
# Prints one line per test case (PASS, SKIP or FAIL, with the executable),
# an executable that exits 77 as one SKIP line (a test of the software
# provider's own wire), then the failures' cmocka messages and a summary.
# Exit status: 0 when nothing failed, 1 otherwise, 77 when the guest
# cannot run. Not part of CTest: a full run takes several minutes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ndkvm=$here/vm/ndkvm
lock=${NDKVM_LOCK:-/tmp/ndkvm.lock}

usage() {
	echo "usage: $0 BUILD_DIR [--rxe] [--timeout S] [TEST...]" >&2
	exit 2
}

(($# >= 1)) || usage
build=$(cd "$1" && pwd)
shift
device=siw
per_test=180
tests=()
while (($#)); do
	case $1 in
	--rxe) device=rxe && shift ;;
	--timeout) per_test=$2 && shift 2 ;;
	-*) usage ;;
	*) tests+=("$1") && shift ;;
	esac
done
if ! "$ndkvm" check >/dev/null 2>&1; then
	echo "verbs-guest: the interop guest cannot run here (ndkvm build?)" >&2
	exit 77
fi
[[ -e $build/libndk.so.0 ]] || {
	echo "verbs-guest: no libndk.so.0 in $build" >&2
	exit 2
}
if ((${#tests[@]} == 0)); then
	for t in "$build"/tests/func/test_*; do
		[[ -x $t && -f $t ]] && tests+=("$(basename "$t")")
	done
fi

# What the guest gets: the library, the test executables, cmocka (the
# guest image has no copy), ndkinfo.
files=(--file "$(readlink -f "$build/libndk.so.0"):/opt/ndk/libndk.so.0"
	--file "$build/tools/ndkinfo:/opt/ndk/ndkinfo")
cmocka=$(ldd "$build/tests/func/${tests[0]}" |
	awk '$1 ~ /^libcmocka/ { print $3 }')
[[ -n $cmocka ]] && files+=(--file "$(readlink -f "$cmocka"):/opt/ndk/$(basename "$cmocka")")
for t in "${tests[@]}"; do
	files+=(--file "$build/tests/func/$t:/opt/ndk/$t")
done

if [[ $device == rxe ]]; then
	setup='modload rdma_rxe >/dev/null; rdma link delete siw0;
rdma link add rxe0 type rxe netdev eth0'
else
	setup=:
fi
# Per test case, the status line that follows its RUN line (cmocka
# repeats failures and skips in its summary: those are not counted).
guest=$(
	cat <<EOF
export LD_LIBRARY_PATH=/opt/ndk PATH=/opt/ndk:\$PATH
export NDK_PROVIDER=verbs NDK_TEST_IF=eth0 NDK_TEST_ADDR4=10.0.2.15
export NDK_TEST_ADDR6=fd00::15 NDK_RUNTIME_DIR=/tmp/ndk-runtime
$setup
ip -6 addr add fd00::15/64 dev eth0 nodad
rdma link
ndkinfo -I eth0 | grep -E '^(Provider|Device|RdmaTechnology) '
cd /tmp
for n in ${tests[*]}; do
	timeout $per_test /opt/ndk/\$n >/tmp/\$n.log 2>&1
	rc=\$?
	if [ \$rc = 77 ]; then
		echo "SKIP \$n (all): \$(tail -n1 /tmp/\$n.log)"
		continue
	fi
	awk -v exe=\$n '
		/^\[ RUN      \]/ { cur = \$4; next }
		cur != "" && /^\[       OK \]/ { print "PASS " exe " " cur; cur = ""; next }
		cur != "" && /^\[  SKIPPED \]/ { print "SKIP " exe " " cur; cur = ""; next }
		cur != "" && /^\[  (FAILED|ERROR)  *\] test/ { print "FAIL " exe " " cur; cur = ""; next }
		END { if (cur != "") print "FAIL " exe " " cur " (did not finish)" }
	' /tmp/\$n.log
	if [ \$rc = 124 ]; then
		echo "FAIL \$n (timed out after ${per_test} s)"
	elif [ \$rc -gt 128 ]; then
		echo "FAIL \$n (killed by signal \$((rc - 128)))"
	fi
done
for n in ${tests[*]}; do
	grep -q '^\[  \(FAILED\|ERROR\)' /tmp/\$n.log 2>/dev/null || continue
	echo "---- \$n"
	grep -A2 '^\[  ERROR   \] ---\|^Could not run\|Segmentation' /tmp/\$n.log |
		grep -v 'closed with' | head -n 40
done
EOF
)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
flock "$lock" "$ndkvm" run --quiet --mem 2048 \
	--timeout $((per_test * ${#tests[@]} + 120)) "${files[@]}" \
	-- "$guest" | tee "$out"
pass=$(grep -c '^PASS ' "$out" || true)
skip=$(grep -c '^SKIP ' "$out" || true)
fail=$(grep -c '^FAIL ' "$out" || true)
echo "verbs-guest ($device): $pass passed, $skip skipped, $fail failed"
((fail == 0))
