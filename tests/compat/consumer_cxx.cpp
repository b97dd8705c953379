// SPDX-License-Identifier: MIT
// The same consumer, built as C++: ndk.h must serve C++ code as it is.
#include "consumer.c"
