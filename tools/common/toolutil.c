/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "toolutil.h"

/* ---- The command line ---- */

/* A signal handler may store only to a lock-free atomic. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "atomic_int is lock-free");
atomic_int tool_stop;

void tool_print_version(void)
{
	printf("%s (libndk) %s, NDKPI %u.%u\n", tool_prog, NDK_TOOLS_VERSION,
	       NDK_PROVIDER_MAJOR_VERSION, NDK_PROVIDER_MINOR_VERSION);
}

void tool_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", tool_prog);
	exit(TOOL_EXIT_USAGE);
}

void tool_usage_hint(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", tool_prog);
	exit(TOOL_EXIT_USAGE);
}

uint64_t tool_arg_count(const char *opt, const char *s, uint64_t min,
			uint64_t max)
{
	unsigned long long v;
	const char *p;
	char *end;

	for (p = s; *p && isdigit((unsigned char)*p); p++)
		;
	errno = 0;
	v = *s && !*p ? strtoull(s, &end, 10) : 0;
	if (!*s || *p || errno || v < min || v > max)
		tool_usage_error("%s: expected a whole number from %llu to "
				 "%llu, not '%s'",
				 opt, (unsigned long long)min,
				 (unsigned long long)max, s);
	return v;
}

double tool_arg_seconds(const char *opt, const char *s, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* Decimal only: no hex floats, infinities or NaN. */
	if (!*s || *end || errno || !isfinite(v) || v < min || v > max ||
	    strpbrk(s, "xXnNiI"))
		tool_usage_error("%s: expected seconds from %g to %g, not '%s'",
				 opt, min, max, s);
	return v;
}

uint64_t tool_arg_size(const char *opt, const char *s, uint64_t min,
		       uint64_t max)
{
	uint64_t v;

	if (tool_parse_size(s, &v) || v < min || v > max)
		tool_usage_error("%s: expected a size from %llu to %llu bytes "
				 "(k, m, g suffixes), not '%s'",
				 opt, (unsigned long long)min,
				 (unsigned long long)max, s);
	return v;
}

uint16_t tool_arg_port(const char *s)
{
	return (uint16_t)tool_arg_count("-p", s, 0, 65535);
}

NET_IFINDEX tool_arg_interface(const char *s, char name[IF_NAMESIZE])
{
	NET_IFINDEX idx = 0;
	int r = tool_parse_interface(s, &idx, name);

	if (r == -1)
		tool_usage_error("-I: bad interface '%s'", s);
	if (r) {
		fprintf(stderr, "%s: no interface %s\n", tool_prog, s);
		exit(TOOL_EXIT_FAIL);
	}
	return idx;
}

void tool_arg_addr(const char *what, const char *s, uint16_t default_port,
		   struct sockaddr_storage *out)
{
	if (tool_parse_addr(s, default_port, out))
		tool_usage_error("%s: '%s' is no address", what, s);
}

static void tool_on_signal(int sig)
{
	(void)sig;
	tool_stop = 1;
}

void tool_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tool_on_signal;
	sa.sa_flags = (int)SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if the
 * bytes there are not one (overlong forms, surrogates and code points
 * above U+10FFFF are not).
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

void text_printable(const char *s, char *out, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), o = 0, k;

	if (!len)
		return;
	while (n && o + 1 < len) {
		k = utf8_len(p, n);
		if (k == 1 && (*p < 0x20 || *p == 0x7f))
			k = 0;
		if (!k) {
			out[o++] = '?';
			p++;
			n--;
			continue;
		}
		if (o + k >= len)
			break;
		memcpy(out + o, p, k);
		o += k;
		p += k;
		n -= k;
	}
	out[o] = '\0';
}

/* ---- JSON ---- */

void json_init(struct json *j, FILE *f, bool compact)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->compact = compact;
}

static void json_indent(struct json *j)
{
	int i;

	if (j->compact)
		return;
	fputc('\n', j->f);
	for (i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

static void json_quoted(struct json *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), k;

	fputc('"', j->f);
	while (n) {
		switch (*p) {
		case '"':
			fputs("\\\"", j->f);
			break;
		case '\\':
			fputs("\\\\", j->f);
			break;
		case '\b':
			fputs("\\b", j->f);
			break;
		case '\f':
			fputs("\\f", j->f);
			break;
		case '\n':
			fputs("\\n", j->f);
			break;
		case '\r':
			fputs("\\r", j->f);
			break;
		case '\t':
			fputs("\\t", j->f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fprintf(j->f, "\\u%04x", *p);
				break;
			}
			k = utf8_len(p, n);
			if (!k) {
				/* Not UTF-8: the replacement character. */
				fputs("\\ufffd", j->f);
				break;
			}
			fwrite(p, 1, k, j->f);
			p += k;
			n -= k;
			continue;
		}
		p++;
		n--;
	}
	fputc('"', j->f);
}

/* Separator, newline and key before a value at the current depth. */
static void json_member(struct json *j, const char *key)
{
	if (j->depth > 0) {
		if (j->has_items[j->depth])
			fputc(',', j->f);
		j->has_items[j->depth] = true;
		json_indent(j);
	}
	if (key) {
		json_quoted(j, key);
		fputs(j->compact ? ":" : ": ", j->f);
	}
}

static void json_open(struct json *j, const char *key, char c)
{
	json_member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->has_items[j->depth] = false;
}

static void json_close(struct json *j, char c)
{
	bool items = j->has_items[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (items)
		json_indent(j);
	fputc(c, j->f);
}

void json_begin_object(struct json *j, const char *key)
{
	json_open(j, key, '{');
}

void json_end_object(struct json *j)
{
	json_close(j, '}');
}

void json_begin_array(struct json *j, const char *key)
{
	json_open(j, key, '[');
}

void json_end_array(struct json *j)
{
	json_close(j, ']');
}

void json_string(struct json *j, const char *key, const char *value)
{
	json_member(j, key);
	json_quoted(j, value);
}

void json_uint(struct json *j, const char *key, unsigned long long value)
{
	json_member(j, key);
	fprintf(j->f, "%llu", value);
}

void json_null(struct json *j, const char *key)
{
	json_member(j, key);
	fputs("null", j->f);
}

void json_double(struct json *j, const char *key, double value, int decimals)
{
	json_member(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.*f", decimals, value);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, bool value)
{
	json_member(j, key);
	fputs(value ? "true" : "false", j->f);
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
}

/* ---- -I ---- */

int tool_parse_interface(const char *arg, NET_IFINDEX *index,
			 char name[IF_NAMESIZE])
{
	const char *p;
	char *end;
	unsigned long v;

	if (!*arg)
		return -1;
	for (p = arg; *p && isdigit((unsigned char)*p); p++)
		;
	if (!*p) {
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || v == 0 || v > 0xffffffffUL)
			return -2;
		*index = (NET_IFINDEX)v;
		return if_indextoname(*index, name) ? 0 : -2;
	}
	if (strlen(arg) >= IF_NAMESIZE)
		return -2;
	*index = if_nametoindex(arg);
	if (!*index)
		return -2;
	snprintf(name, IF_NAMESIZE, "%s", arg);
	return 0;
}

int tool_parse_size(const char *s, uint64_t *out)
{
	unsigned int shift = 0;
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	}
	if (shift)
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}
