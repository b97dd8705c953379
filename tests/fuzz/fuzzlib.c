/* SPDX-License-Identifier: MIT */
/* Fixed-address memory, fixed tokens and MR registration for fuzz
 * targets (fuzzlib.h). */
#include <string.h>
#include <sys/mman.h>
#include "sw/stag.h"
#include "fuzzlib.h"

static int zeros(void *buf, size_t len)
{
	memset(buf, 0, len);
	return 0;
}

void fuzz_fixed_tokens(void)
{
	sw_stag_set_entropy(zeros);
}

uint8_t *fuzz_map(size_t len, uintptr_t at)
{
	void *p = MAP_FAILED;

#ifdef MAP_FIXED_NOREPLACE
	if (at)
		p = mmap((void *)at, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0);
#endif
	if (p == MAP_FAILED)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

NDK_MR *fuzz_reg(NDK_PD *pd, void *p, size_t len, ULONG flags)
{
	NDK_MR *mr;
	PMDL mdl;

	if (pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr))
		return NULL;
	mdl = IoAllocateMdl(p, (ULONG)len, FALSE, FALSE, NULL);
	if (!mdl ||
	    mr->Dispatch->NdkRegisterMr(mr, mdl, len, flags, NULL, NULL)) {
		if (mdl)
			IoFreeMdl(mdl);
		return NULL;
	}
	IoFreeMdl(mdl);
	return mr;
}
