/* SPDX-License-Identifier: MIT */
/*
 * libndk's own version: CMake's project(VERSION), which checks at
 * configure time that these say the same. Not the NDKPI version: that is
 * NDK_VERSION (ndk/types.h) and NDK_PROVIDER_MAJOR_VERSION /
 * NDK_PROVIDER_MINOR_VERSION (ndk/ndk.h).
 */
#ifndef NDK_VERSION_H
#define NDK_VERSION_H

#define NDK_VERSION_MAJOR  0
#define NDK_VERSION_MINOR  1
#define NDK_VERSION_PATCH  0
#define NDK_VERSION_STRING "0.1.0"

#endif /* NDK_VERSION_H */
