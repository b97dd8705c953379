#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A consumer of libndk does not link rdma-core, and runs where rdma-core
# is missing: the software provider serves, and NdkQueryAdapterProvider's
# Reason and the log say why the verbs provider does not (docs/verbs.md,
# Building). rdma-core's libraries are hidden by mounting /dev/null over
# them in a private mount namespace (root only; 77 otherwise). For a
# build with the verbs provider.
#
#   check_no_rdma_core.sh CONSUMER
set -euo pipefail
consumer=$1

if ldd "$consumer" | grep -E 'lib(ibverbs|rdmacm)\.so'; then
	echo "no-rdma-core: $consumer links rdma-core" >&2
	exit 1
fi
libs=()
for l in libibverbs.so.1 librdmacm.so.1; do
	# awk reads to the end: an early exit would fail ldconfig (pipefail).
	p=$(ldconfig -p | awk -v l="$l" '$1 == l && !p { p = $NF } END { print p }')
	[[ -n $p ]] && libs+=("$(readlink -f "$p")")
done
if ((${#libs[@]} == 0)); then
	# Already a machine without rdma-core.
	out=$("$consumer")
elif [[ $(id -u) != 0 ]] || ! unshare -m true 2>/dev/null; then
	echo "SKIP: needs root for a mount namespace"
	exit 77
else
	mounts=""
	for p in "${libs[@]}"; do
		mounts+="mount --bind /dev/null '$p' && "
	done
	out=$(NDK_LOG=info unshare -m sh -c "$mounts exec '$consumer'" 2>&1)
	verbs=$(NDK_PROVIDER=verbs unshare -m sh -c \
		"$mounts exec '$consumer'" 2>&1) && {
		echo "no-rdma-core: NDK_PROVIDER=verbs opened an adapter" >&2
		exit 1
	}
	echo "$verbs"
	grep -q "warn: NDK_PROVIDER=verbs: verbs provider unavailable: .*libibverbs.so.1" \
		<<<"$verbs" || {
		echo "no-rdma-core: no warning names libibverbs.so.1" >&2
		exit 1
	}
fi
echo "$out"
grep -qx "provider: software" <<<"$out" || {
	echo "no-rdma-core: the software provider did not serve lo" >&2
	exit 1
}
grep -Eqx "reason: verbs provider unavailable: .*libibverbs\.so\.1.*" \
	<<<"$out" || {
	echo "no-rdma-core: Reason does not say why the verbs provider is out" >&2
	exit 1
}
echo "no-rdma-core: the consumer links no rdma-core and runs without it"
