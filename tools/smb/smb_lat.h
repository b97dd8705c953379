/* SPDX-License-Identifier: MIT */
/*
 * Request latencies in fixed memory: a log-linear histogram (32 buckets
 * per power of two of nanoseconds), so a bench of any length keeps a few
 * KiB and a percentile is off by at most 1/32 of its value.
 */
#ifndef NDK_SMB_LAT_H
#define NDK_SMB_LAT_H

#include <stdint.h>

#define SMB_LAT_SUB_BITS 5
#define SMB_LAT_OCTAVES	 44 /* 2^44 ns: about 4.9 hours */
#define SMB_LAT_BUCKETS	 (SMB_LAT_OCTAVES << SMB_LAT_SUB_BITS)

struct smb_lat {
	uint64_t count;
	uint64_t max_ns;
	uint64_t sum_ns;
	uint32_t bucket[SMB_LAT_BUCKETS];
};

void smb_lat_add(struct smb_lat *l, uint64_t ns);
/* The smallest value v such that at least p percent of the samples are
 * at most v (to the bucket's upper end, never above the maximum); 0
 * when there is none. */
uint64_t smb_lat_percentile(const struct smb_lat *l, double p);

#endif
