/* SPDX-License-Identifier: MIT */
/*
 * Memory descriptor lists. On Windows an MDL describes locked physical
 * pages; here it describes a virtually contiguous buffer of this process,
 * which is all the NDK functions that take one need.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core/compiler.h"
#include "front/mdl.h"

NDK_EXPORT PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length,
			      BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota,
			      PIRP Irp)
{
	uintptr_t va = (uintptr_t)VirtualAddress;
	PMDL mdl;

	/* There are no IRPs here to attach the MDL to. */
	if (!VirtualAddress || Irp)
		return NULL;
	mdl = calloc(1, sizeof(*mdl));
	if (!mdl)
		return NULL;
	mdl->Size = (CSHORT)sizeof(*mdl);
	mdl->MdlFlags = MDL_ALLOCATED_FIXED_SIZE;
	mdl->StartVa = (PVOID)(va & ~(uintptr_t)(PAGE_SIZE - 1));
	mdl->ByteOffset = (ULONG)(va & (PAGE_SIZE - 1));
	mdl->ByteCount = Length;
	return mdl;
}

NDK_EXPORT VOID IoFreeMdl(PMDL Mdl)
{
	free(Mdl);
}

NDK_EXPORT VOID MmBuildMdlForNonPagedPool(PMDL MemoryDescriptorList)
{
	PMDL mdl = MemoryDescriptorList;

	if (!mdl)
		return;
	mdl->MdlFlags |= MDL_SOURCE_IS_NONPAGED_POOL;
	mdl->MappedSystemVa = (char *)mdl->StartVa + mdl->ByteOffset;
}

NDK_EXPORT PVOID MmGetMdlVirtualAddress(PMDL Mdl)
{
	return (char *)Mdl->StartVa + Mdl->ByteOffset;
}

NDK_EXPORT ULONG MmGetMdlByteCount(PMDL Mdl)
{
	return Mdl->ByteCount;
}

int ndk_mdl_range(const MDL *mdl, uint64_t length, uint64_t *va)
{
	uint64_t start, next, total = 0;
	unsigned int n = 0;
	const MDL *m;

	if (!mdl || !length)
		return -EINVAL;
	start = (uintptr_t)mdl->StartVa + mdl->ByteOffset;
	/* Zero-based virtual addresses are not supported
	 * (NDK_FN_REGISTER_MR). */
	if (!start)
		return -EINVAL;
	next = start;
	for (m = mdl; m; m = m->Next) {
		uint64_t mva = (uintptr_t)m->StartVa + m->ByteOffset;

		if (++n > NDK_MDL_CHAIN_MAX || m->ByteOffset >= PAGE_SIZE)
			return -EINVAL;
		/* "Not virtually contiguous" (NdkRegisterMr, NdkBuildLAM). */
		if (mva != next || m->ByteCount > UINT64_MAX - mva)
			return -EINVAL;
		next = mva + m->ByteCount;
		total += m->ByteCount;
	}
	if (length > total)
		return -EINVAL;
	*va = start;
	return 0;
}

int ndk_mem_check_mapped(uint64_t va, uint64_t len)
{
	/* mincore works in system pages, which may exceed PAGE_SIZE. */
	uint64_t psz = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned char vec[4096];
	uint64_t p, end, chunk;

	if (!len)
		return 0;
	if (va > UINT64_MAX - (len - 1) || va + (len - 1) > UINT64_MAX - psz)
		return -EINVAL;
	p = va & ~(psz - 1);
	end = (va + len + psz - 1) & ~(psz - 1);
	while (p < end) {
		chunk = end - p;
		if (chunk > sizeof(vec) * psz)
			chunk = sizeof(vec) * psz;
		/* ENOMEM: part of the range is not mapped. */
		if (mincore((void *)(uintptr_t)p, chunk, vec))
			return errno == ENOMEM ? -EFAULT : -errno;
		p += chunk;
	}
	return 0;
}

#define LAM_PAGE_MASK ((uint64_t)PAGE_SIZE - 1)

NTSTATUS ndk_lam_plan(const MDL *Mdl, SIZE_T Length,
		      const NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM,
		      ULONG *pLAMSize, struct ndk_lam_plan *plan)
{
	uint64_t need;

	/* Length 0, past the MDL chain, or not virtually contiguous. */
	if (ndk_mdl_range(Mdl, Length, &plan->va))
		return STATUS_INVALID_PARAMETER;
	plan->first = plan->va & ~LAM_PAGE_MASK;
	plan->count =
		(((plan->va + Length - 1) & ~LAM_PAGE_MASK) - plan->first) /
			PAGE_SIZE +
		1;
	need = offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) +
	       plan->count * sizeof(NDK_LOGICAL_ADDRESS);
	/* The size is reported in a ULONG: larger LAMs cannot be described. */
	if (need > UINT32_MAX)
		return STATUS_INSUFFICIENT_RESOURCES;
	plan->size = (ULONG)need;
	if (ndk_mem_check_mapped(plan->va, Length))
		return STATUS_INVALID_PARAMETER;
	if (!pNdkLAM || *pLAMSize < need) {
		*pLAMSize = plan->size;
		return STATUS_BUFFER_TOO_SMALL;
	}
	return STATUS_SUCCESS;
}

void ndk_lam_fill(const struct ndk_lam_plan *plan, uint64_t cookie,
		  NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		  ULONG *pFBO)
{
	uint64_t i;

	pNdkLAM->AdapterContext = (PVOID)(uintptr_t)cookie;
	pNdkLAM->AdapterPageCount = (ULONG)plan->count;
	for (i = 0; i < plan->count; i++)
		pNdkLAM->AdapterPageArray[i].QuadPart =
			(LONGLONG)(plan->first + i * PAGE_SIZE);
	*pLAMSize = plan->size;
	*pFBO = (ULONG)(plan->va & LAM_PAGE_MASK);
}
