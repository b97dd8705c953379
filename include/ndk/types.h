/* SPDX-License-Identifier: MIT */
/*
 * Windows base types with their Windows x64 widths.
 *
 * LP64 Linux makes `long` 64-bit, so ULONG and friends are spelled with
 * fixed-width types: ULONG and NTSTATUS are 32-bit, BOOLEAN is 8-bit,
 * SIZE_T, ULONG_PTR and pointers are 64-bit. Every NDK structure built from
 * these has the layout a Windows x64 consumer expects.
 */
#ifndef NDK_TYPES_H
#define NDK_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef VOID
#define VOID void
#endif
#ifndef CONST
#define CONST const
#endif
#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif

typedef char CHAR;
typedef uint8_t UCHAR;
typedef uint8_t BOOLEAN;
typedef int16_t SHORT;
typedef int16_t CSHORT;
typedef uint16_t USHORT;
typedef int32_t LONG;
typedef uint32_t ULONG;
typedef uint32_t UINT32;
typedef int64_t LONGLONG;
typedef uint64_t ULONGLONG;
typedef uint64_t ULONG64;
typedef uint64_t UINT64;
typedef uint64_t SIZE_T;
typedef uint64_t ULONG_PTR;
typedef ULONG_PTR KAFFINITY;
typedef void *PVOID;
typedef ULONG *PULONG;
typedef const char *PCSTR;

typedef LONG NTSTATUS;
typedef NTSTATUS NDIS_STATUS;
typedef ULONG NDIS_OID;
typedef ULONG NET_IFINDEX;
typedef USHORT ADDRESS_FAMILY;

typedef union _LARGE_INTEGER {
	struct {
		ULONG LowPart;
		LONG HighPart;
	};
	struct {
		ULONG LowPart;
		LONG HighPart;
	} u;
	LONGLONG QuadPart;
} LARGE_INTEGER;
typedef LARGE_INTEGER PHYSICAL_ADDRESS;

typedef struct _GUID {
	ULONG Data1;
	USHORT Data2;
	USHORT Data3;
	UCHAR Data4[8];
} GUID;

typedef struct _GROUP_AFFINITY {
	KAFFINITY Mask;
	USHORT Group;
	USHORT Reserved[3];
} GROUP_AFFINITY, *PGROUP_AFFINITY;

/*
 * Socket addresses are Linux's: AF_INET is 2 as on Windows, but AF_INET6
 * is Linux's 10, not Windows' 23. Code that spells the family as AF_INET6
 * compiles and works unchanged; a literal 23 does not.
 */
typedef struct sockaddr SOCKADDR;
typedef struct sockaddr *PSOCKADDR;
typedef struct sockaddr_in SOCKADDR_IN;
typedef struct sockaddr_in6 SOCKADDR_IN6;

typedef union _SOCKADDR_INET {
	SOCKADDR_IN Ipv4;
	SOCKADDR_IN6 Ipv6;
	ADDRESS_FAMILY si_family;
} SOCKADDR_INET, *PSOCKADDR_INET;

#ifndef PAGE_SIZE
#define PAGE_SIZE 4096
#endif

/*
 * Memory descriptor list with the Windows x64 header layout. Here an MDL
 * describes one virtually contiguous buffer of the calling process; MDLs
 * may be chained through Next. Build them with IoAllocateMdl().
 */
typedef struct _MDL {
	struct _MDL *Next;
	CSHORT Size;
	CSHORT MdlFlags;
	USHORT AllocationProcessorNumber;
	USHORT Reserved;
	PVOID Process;
	PVOID MappedSystemVa;
	PVOID StartVa; /* page-aligned start */
	ULONG ByteCount;
	ULONG ByteOffset; /* offset of the buffer in its first page */
} MDL, *PMDL;

#define MDL_MAPPED_TO_SYSTEM_VA	    0x0001
#define MDL_PAGES_LOCKED	    0x0002
#define MDL_SOURCE_IS_NONPAGED_POOL 0x0004
#define MDL_ALLOCATED_FIXED_SIZE    0x0008

typedef struct _IRP IRP, *PIRP;

#ifdef __cplusplus
}
#endif

#endif /* NDK_TYPES_H */
