/* SPDX-License-Identifier: MIT */
/*
 * What the tools share: the parts of the command-line convention
 * (docs/tools.md) that are code, a small JSON writer that always emits
 * valid JSON (escaped, valid UTF-8), printable text for names taken from
 * the system, sizes ("64k"), and the -I argument (a name or an index).
 */
#ifndef NDK_TOOLS_TOOLUTIL_H
#define NDK_TOOLS_TOOLUTIL_H

#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <net/if.h>
#include <ndk/ndk.h>
#include "tool_exit.h"
#include "tool_host.h"

#ifndef NDK_TOOLS_VERSION
#define NDK_TOOLS_VERSION "unknown"
#endif

/* ---- The command line (docs/tools.md) ---- */

/*
 * Long-only options of getopt_long tables start here, above every
 * character; TOOL_OPT_VERSION is --version.
 */
#define TOOL_OPT_VERSION 0x100
#define TOOL_OPT_FIRST	 0x101

/* --help and --version, for the end of every getopt_long table. */
#define TOOL_LONG_COMMON                                       \
	{ "help", no_argument, NULL, 'h' },                    \
	{                                                      \
		"version", no_argument, NULL, TOOL_OPT_VERSION \
	}

/* --version: "prog (libndk) VERSION, NDKPI 2.1" on stdout. */
void tool_print_version(void);

/*
 * A usage error: "prog: MESSAGE" and where to find the usage on stderr,
 * then exit TOOL_EXIT_USAGE.
 */
void tool_usage_error(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));

/* After getopt_long's own message: where the usage is; exit
 * TOOL_EXIT_USAGE. */
void tool_usage_hint(void) __attribute__((noreturn));

/*
 * Option arguments: each returns the value, or calls tool_usage_error
 * naming opt ("-n") when the text is not one in [min, max].
 * tool_arg_count: decimal digits only. tool_arg_seconds: a decimal number
 * of seconds. tool_arg_size: as tool_parse_size. tool_arg_port: 0-65535.
 */
uint64_t tool_arg_count(const char *opt, const char *s, uint64_t min,
			uint64_t max);
double tool_arg_seconds(const char *opt, const char *s, double min, double max);
uint64_t tool_arg_size(const char *opt, const char *s, uint64_t min,
		       uint64_t max);
uint16_t tool_arg_port(const char *s);
/* -I: exits TOOL_EXIT_USAGE when malformed, TOOL_EXIT_FAIL when there is
 * no such interface. */
NET_IFINDEX tool_arg_interface(const char *s, char name[IF_NAMESIZE]);
/* -b and HOST: exits TOOL_EXIT_USAGE when it does not resolve. */
void tool_arg_addr(const char *what, const char *s, uint16_t default_port,
		   struct sockaddr_storage *out);

/*
 * SIGINT and SIGTERM set tool_stop; the handler is removed as it runs,
 * so a second signal ends the process (docs/tools.md, Signals). Blocking
 * calls return EINTR rather than restart.
 */
extern atomic_int tool_stop; /* lock-free: set in the handler */
void tool_catch_signals(void);

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
/* A number with that many decimals; null when not finite. */
void json_double(struct json *j, const char *key, double value, int decimals);
void json_bool(struct json *j, const char *key, bool value);
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
