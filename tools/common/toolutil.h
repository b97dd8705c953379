/* SPDX-License-Identifier: MIT */
/*
 * What the tools share: a small JSON writer that always emits valid JSON
 * (escaped, valid UTF-8), printable text for names taken from the system,
 * sizes ("64k"), and the -I argument (a name or an index).
 */
#ifndef NDK_TOOLS_TOOLUTIL_H
#define NDK_TOOLS_TOOLUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <net/if.h>
#include <ndk/ndk.h>
#include "tool_host.h"

#ifndef NDK_TOOLS_VERSION
#define NDK_TOOLS_VERSION "unknown"
#endif

#define JSON_MAX_DEPTH 16

/*
 * A JSON document written as it goes. Members of an object take a key,
 * elements of an array (and the top-level value) take NULL. Compact
 * output is one line; otherwise two spaces per level.
 */
struct json {
	FILE *f;
	bool compact;
	int depth;
	bool has_items[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f, bool compact);
void json_begin_object(struct json *j, const char *key);
void json_end_object(struct json *j);
void json_begin_array(struct json *j, const char *key);
void json_end_array(struct json *j);
void json_string(struct json *j, const char *key, const char *value);
void json_uint(struct json *j, const char *key, unsigned long long value);
void json_null(struct json *j, const char *key);
/* Ends the document with a newline. */
void json_finish(struct json *j);

/*
 * Copies s into out (at most len - 1 bytes, always terminated), with
 * control characters and bytes that are not valid UTF-8 replaced by '?'.
 */
void text_printable(const char *s, char *out, size_t len);

/*
 * A byte count: a number (decimal, or 0x hex) with an optional k, m or g
 * (powers of two), "64k", "1m", "4096". 0, or -1 when s is empty, negative,
 * has anything after the suffix, or overflows 64 bits.
 */
int tool_parse_size(const char *s, uint64_t *out);

/*
 * Resolves -I: an interface name, or a decimal interface index. Returns 0
 * and fills *index and name, -1 if the argument is malformed (a usage
 * error), -2 if no such interface exists.
 */
int tool_parse_interface(const char *arg, NET_IFINDEX *index,
			 char name[IF_NAMESIZE]);

#endif
