#!/usr/bin/env bash
# Installs the build into a scratch prefix and builds a consumer against it
# twice: with pkg-config, and with CMake's find_package(ndk). Checks that
# the tools and their man pages are installed and that the tools run.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
# Every tool with its man page (section 1, docs/tools.md).
for tool in ndkstat ndkinfo ndkping ndkperf ndkstress ndkrping ndkcmatose \
	ndknvme ndknvmet; do
	[ -x "$tmp/prefix/bin/$tool" ] || {
		echo "install: bin/$tool missing" >&2
		exit 1
	}
	[ -s "$tmp/prefix/share/man/man1/$tool.1" ] || {
		echo "install: share/man/man1/$tool.1 missing" >&2
		exit 1
	}
	LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/prefix/bin/$tool" --version |
		grep -q "^$tool (libndk) " || {
		echo "install: $tool --version" >&2
		exit 1
	}
done
LD_LIBRARY_PATH="$tmp/prefix/lib" NDK_RUNTIME_DIR="$tmp/runtime" \
	"$tmp/prefix/bin/ndkstat" -I lo >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib" NDK_RUNTIME_DIR="$tmp/runtime" \
	"$tmp/prefix/bin/ndkinfo" -I lo >/dev/null
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc "$src/consumer.c" $(pkg-config --cflags --libs ndk) -lpthread \
	-o "$tmp/consumer-pc"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/consumer-pc"

mkdir "$tmp/cm"
cat >"$tmp/cm/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(ndk REQUIRED)
add_executable(consumer $src/consumer.c)
target_link_libraries(consumer ndk::ndk)
CMAKE
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
	>/dev/null
cmake --build "$tmp/cm/build" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/cm/build/consumer"
echo "install: pkg-config and find_package consumers ran; the tools and their man pages installed"
