# Writes ndk.pc for the prefix the library is installed to. Run at install
# time (CMakeLists.txt), when CMAKE_INSTALL_PREFIX is the one that
# `cmake --install --prefix` gave, or as `cmake -P` to check it:
#
#   cmake -DNDK_PC_PREFIX=/usr -DNDK_PC_LIBDIR=lib/x86_64-linux-gnu
#         -DNDK_PC_INCLUDEDIR=include -DNDK_PC_OUT=ndk.pc -P ndk_pc.cmake
#
# The paths are absolute: pkg-config drops -I/usr/include and -L/usr/lib
# only when they are spelt so, and a path made relative to ${pcfiledir}
# (lib/x86_64-linux-gnu/pkgconfig/../../..) is not. PKG_CONFIG_SYSROOT_DIR
# serves a tree that is not yet at its prefix (a DESTDIR).
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED NDK_PC_IN)
	set(NDK_PC_IN ${CMAKE_CURRENT_LIST_DIR}/ndk.pc.in)
endif()
if(NOT DEFINED NDK_PC_VERSION)
	set(NDK_PC_VERSION 0)
endif()
if(NOT DEFINED NDK_PC_LIBS_PRIVATE)
	set(NDK_PC_LIBS_PRIVATE "")
endif()
foreach(v NDK_PC_PREFIX NDK_PC_LIBDIR NDK_PC_INCLUDEDIR NDK_PC_OUT)
	if(NOT DEFINED ${v})
		message(FATAL_ERROR "ndk_pc.cmake: ${v} not set")
	endif()
endforeach()

# "/usr/" and "/usr" alike; the root prefix is "" (then libdir is /lib).
string(REGEX REPLACE "/+$" "" NDK_PC_PREFIX "${NDK_PC_PREFIX}")
foreach(d LIBDIR INCLUDEDIR)
	# GNUInstallDirs' dirs are relative to the prefix unless given
	# absolute (-DCMAKE_INSTALL_LIBDIR=/opt/lib).
	if(NOT IS_ABSOLUTE "${NDK_PC_${d}}")
		set(NDK_PC_${d} "\${prefix}/${NDK_PC_${d}}")
	endif()
endforeach()
configure_file(${NDK_PC_IN} ${NDK_PC_OUT} @ONLY)
