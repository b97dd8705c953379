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
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/consumer-pc" >"$tmp/out"
cat "$tmp/out"
# ndk/version.h says the version the package does.
grep -qx "libndk $(pkg-config --modversion ndk) (.*)" "$tmp/out" || {
	echo "install: ndk/version.h and ndk.pc disagree" >&2
	exit 1
}

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

# Installed for /usr into a staging tree (DESTDIR, as packages are built):
# ndk.pc names /usr itself, so PKG_CONFIG_SYSROOT_DIR finds the tree.
unset PKG_CONFIG_PATH
dest=$tmp/dest
DESTDIR=$dest cmake --install "$build" --prefix /usr >/dev/null
pcdir=$(dirname "$(find "$dest/usr" -name ndk.pc -path '*/pkgconfig/*')")
libdir=${pcdir%/pkgconfig}
grep -qx 'prefix=/usr' "$pcdir/ndk.pc" || {
	echo "install: $pcdir/ndk.pc does not say prefix=/usr" >&2
	exit 1
}
got=$(PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_LIBDIR=$pcdir \
	pkg-config --cflags --libs ndk)
want="-I$dest/usr/include -L$libdir -lndk"
[ "$(echo $got)" = "$want" ] || {
	echo "install: pkg-config gave '$got', want '$want'" >&2
	exit 1
}
# shellcheck disable=SC2086
cc "$src/consumer.c" $got -o "$tmp/consumer-usr"
LD_LIBRARY_PATH=$libdir "$tmp/consumer-usr"
cmake -S "$tmp/cm" -B "$tmp/cm/build-usr" -DCMAKE_PREFIX_PATH="$dest/usr" \
	>/dev/null
cmake --build "$tmp/cm/build-usr" >/dev/null
LD_LIBRARY_PATH=$libdir "$tmp/cm/build-usr/consumer"

# A libdir two levels down (Debian's lib/<multiarch>) and an absolute one.
cmake -DNDK_PC_PREFIX=/usr -DNDK_PC_LIBDIR=lib/x86_64-linux-gnu \
	-DNDK_PC_INCLUDEDIR=include -DNDK_PC_OUT="$tmp/pc/ndk.pc" \
	-P "$src/../../cmake/ndk_pc.cmake"
got=$(PKG_CONFIG_SYSROOT_DIR=/sysroot PKG_CONFIG_LIBDIR=$tmp/pc \
	pkg-config --cflags --libs ndk)
want="-I/sysroot/usr/include -L/sysroot/usr/lib/x86_64-linux-gnu -lndk"
[ "$(echo $got)" = "$want" ] || {
	echo "install: multiarch ndk.pc gave '$got', want '$want'" >&2
	exit 1
}
cmake -DNDK_PC_PREFIX=/opt/ndk -DNDK_PC_LIBDIR=/opt/ndk-lib \
	-DNDK_PC_INCLUDEDIR=inc -DNDK_PC_OUT="$tmp/pc/ndk.pc" \
	-P "$src/../../cmake/ndk_pc.cmake"
got=$(PKG_CONFIG_LIBDIR=$tmp/pc pkg-config --cflags --libs ndk)
want="-I/opt/ndk/inc -L/opt/ndk-lib -lndk"
[ "$(echo $got)" = "$want" ] || {
	echo "install: absolute-libdir ndk.pc gave '$got', want '$want'" >&2
	exit 1
}
echo "install: pkg-config and find_package consumers ran (a scratch prefix and /usr in a DESTDIR); the tools and their man pages installed"
