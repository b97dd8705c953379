/* SPDX-License-Identifier: MIT */
/*
 * Memory descriptor lists. On Windows an MDL describes locked physical
 * pages; here it describes a virtually contiguous buffer of this process,
 * which is all the NDK functions that take one need.
 */
#include <stdint.h>
#include <stdlib.h>
#include "core/compiler.h"
#include <ndk/ndk.h>

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
