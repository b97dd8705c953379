#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The Debian packages of `make deb`, installed: a consumer builds against
# the installed library with pkg-config and with CMake's find_package(ndk),
# runs, and links no rdma-core; ndkinfo runs. The packages are removed
# afterwards, whatever happened (and so is an earlier install of them).
# Root only (dpkg -i).
#
#   check_deb.sh DEB_DIR
set -euo pipefail
debs=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")" && pwd)
pkgs=(libndk0 libndk-dev ndk-tools)
tmp=$(mktemp -d)
cleanup() {
	dpkg --purge "${pkgs[@]}" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# Left over by a run that was killed: replaced (and removed at the end).
for p in "${pkgs[@]}"; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q installed; then
		echo "deb: $p was installed; it is replaced, then removed"
	fi
done
dpkg -i "$debs"/libndk0_*.deb "$debs"/libndk-dev_*.deb \
	"$debs"/ndk-tools_*.deb

# pkg-config from its default path: /usr/include and the multiarch
# libdir are the compiler's own, so only -lndk remains.
flags=$(pkg-config --cflags --libs ndk)
echo "pkg-config --cflags --libs ndk: $flags"
[ "$(echo $flags)" = "-lndk" ] || {
	echo "deb: pkg-config gave '$flags', want '-lndk'" >&2
	exit 1
}
# shellcheck disable=SC2086
cc "$src/consumer.c" $flags -o "$tmp/consumer-pc"
"$tmp/consumer-pc"

mkdir "$tmp/cm"
cat >"$tmp/cm/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(ndk REQUIRED)
add_executable(consumer $src/consumer.c)
target_link_libraries(consumer ndk::ndk)
CMAKE
cmake -S "$tmp/cm" -B "$tmp/cm/build" >/dev/null
cmake --build "$tmp/cm/build" >/dev/null
"$tmp/cm/build/consumer"

for c in "$tmp/consumer-pc" "$tmp/cm/build/consumer"; do
	echo "ldd $(basename "$c"):"
	ldd "$c" | tee "$tmp/ldd"
	if grep -E 'lib(ibverbs|rdmacm)\.so' "$tmp/ldd"; then
		echo "deb: $c links rdma-core" >&2
		exit 1
	fi
done
ndkinfo -I lo >/dev/null
echo "deb: the packages install; pkg-config and find_package consumers build, run and link no rdma-core"
