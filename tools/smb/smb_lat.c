/* SPDX-License-Identifier: MIT */
#include "smb_lat.h"

#define SUB (1u << SMB_LAT_SUB_BITS)

/* Values below SUB have a bucket each; above, an octave has SUB buckets
 * (its top bits after the leading one). */
static unsigned int bucket_of(uint64_t ns)
{
	unsigned int e;

	if (ns < SUB)
		return (unsigned int)ns;
	e = 63u - (unsigned int)__builtin_clzll(ns);
	if (e >= SMB_LAT_OCTAVES + SMB_LAT_SUB_BITS - 1)
		return SMB_LAT_BUCKETS - 1;
	return (e - SMB_LAT_SUB_BITS + 1) * SUB +
	       (unsigned int)((ns >> (e - SMB_LAT_SUB_BITS)) & (SUB - 1));
}

/* The largest value a bucket holds. */
static uint64_t bucket_top(unsigned int b)
{
	unsigned int e;

	if (b < SUB)
		return b;
	e = b / SUB + SMB_LAT_SUB_BITS - 1;
	return ((uint64_t)(SUB + b % SUB) << (e - SMB_LAT_SUB_BITS)) +
	       ((uint64_t)1 << (e - SMB_LAT_SUB_BITS)) - 1;
}

void smb_lat_add(struct smb_lat *l, uint64_t ns)
{
	l->bucket[bucket_of(ns)]++;
	l->count++;
	l->sum_ns += ns;
	if (ns > l->max_ns)
		l->max_ns = ns;
}

uint64_t smb_lat_percentile(const struct smb_lat *l, double p)
{
	uint64_t rank, seen = 0, top;
	unsigned int b;

	if (!l->count)
		return 0;
	if (p <= 0)
		p = 0;
	if (p >= 100)
		return l->max_ns;
	/* Nearest rank: the ceil(p% of count)-th sample, at least the 1st. */
	rank = (uint64_t)((p / 100.0) * (double)l->count);
	if ((double)rank < (p / 100.0) * (double)l->count)
		rank++;
	if (!rank)
		rank = 1;
	for (b = 0; b < SMB_LAT_BUCKETS; b++) {
		seen += l->bucket[b];
		if (seen >= rank)
			break;
	}
	/* The last bucket also takes everything above it. */
	if (b >= SMB_LAT_BUCKETS - 1)
		return l->max_ns;
	top = bucket_top(b);
	return top < l->max_ns ? top : l->max_ns;
}
