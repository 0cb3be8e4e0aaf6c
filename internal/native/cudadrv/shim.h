// Our own declarations of the CUDA driver API entry points gdrcheck's
// multicast (NVLink SHARP) probe uses. No CUDA header is needed at build
// time: libcuda.so.1 is dlopen'ed at run time and every entry point is
// resolved by name into this table. Values and layouts are those of the
// public CUDA driver API (cuda.h, documented at
// https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html,
// .../structCUmulticastObjectProp__v1.html and
// .../group__CUDA__MULTICAST.html; the multicast calls exist since CUDA
// 12.1); see README.md beside this file.
#ifndef GDR_CUDRV_SHIM_H
#define GDR_CUDRV_SHIM_H
#include <stddef.h>
#include "../dl/bind.h"

typedef int gdr_CUresult;
typedef int gdr_CUdevice;
typedef void *gdr_CUcontext;
typedef unsigned long long gdr_CUhandle; // CUmemGenericAllocationHandle

enum {
	GDR_CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 132,
	GDR_CU_MEM_ALLOCATION_TYPE_PINNED = 1,
	GDR_CU_MEM_LOCATION_TYPE_DEVICE = 1,
	GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
	GDR_CU_MULTICAST_GRANULARITY_MINIMUM = 0,
	GDR_CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
	// Returned by the shim for a multicast entry point the driver lacks
	// (no CUresult has this value).
	GDR_NOSYM = -3,
};

// CUmulticastObjectProp (CUmulticastObjectProp_v1): 32 bytes on LP64,
// size at offset 8.
typedef struct {
	unsigned int numDevices;
	size_t size;
	unsigned long long handleTypes;
	unsigned long long flags;
} gdr_CUmulticastObjectProp;

// CUmemLocation and CUmemAllocationProp (CUmemAllocationProp_v1): 32
// bytes on LP64, win32HandleMetaData at offset 16.
typedef struct {
	int type;
	int id;
} gdr_CUmemLocation;

typedef struct {
	int type;
	int requestedHandleTypes;
	gdr_CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} gdr_CUmemAllocationProp;

_Static_assert(sizeof(gdr_CUmulticastObjectProp) == 32, "CUmulticastObjectProp is 32 bytes");
_Static_assert(offsetof(gdr_CUmulticastObjectProp, size) == 8, "CUmulticastObjectProp.size at 8");
_Static_assert(offsetof(gdr_CUmulticastObjectProp, handleTypes) == 16, "CUmulticastObjectProp.handleTypes at 16");
_Static_assert(sizeof(gdr_CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");
_Static_assert(offsetof(gdr_CUmemAllocationProp, win32HandleMetaData) == 16, "CUmemAllocationProp.win32HandleMetaData at 16");

typedef struct gdr_cudrv {
	void *h;
	gdr_CUresult (*Init)(unsigned int);
	gdr_CUresult (*DriverGetVersion)(int *);
	gdr_CUresult (*GetErrorName)(gdr_CUresult, const char **);
	gdr_CUresult (*GetErrorString)(gdr_CUresult, const char **);
	gdr_CUresult (*DeviceGetCount)(int *);
	gdr_CUresult (*DeviceGet)(gdr_CUdevice *, int);
	gdr_CUresult (*DeviceGetAttribute)(int *, int, gdr_CUdevice);
	gdr_CUresult (*DeviceGetPCIBusId)(char *, int, gdr_CUdevice);
	gdr_CUresult (*DevicePrimaryCtxRetain)(gdr_CUcontext *, gdr_CUdevice);
	gdr_CUresult (*DevicePrimaryCtxRelease_v2)(gdr_CUdevice);
	gdr_CUresult (*CtxSetCurrent)(gdr_CUcontext);
	gdr_CUresult (*MemGetAllocationGranularity)(size_t *, const gdr_CUmemAllocationProp *, int);
	gdr_CUresult (*MemCreate)(gdr_CUhandle *, size_t, const gdr_CUmemAllocationProp *, unsigned long long);
	gdr_CUresult (*MemRelease)(gdr_CUhandle);
	// The multicast calls are optional: a driver before CUDA 12.1 lacks
	// them, which the probe reports instead of refusing to load.
	gdr_CUresult (*MulticastGetGranularity)(size_t *, const gdr_CUmulticastObjectProp *, int);
	gdr_CUresult (*MulticastCreate)(gdr_CUhandle *, const gdr_CUmulticastObjectProp *);
	gdr_CUresult (*MulticastAddDevice)(gdr_CUhandle, gdr_CUdevice);
	gdr_CUresult (*MulticastBindMem)(gdr_CUhandle, size_t, gdr_CUhandle, size_t, size_t, unsigned long long);
	gdr_CUresult (*MulticastUnbind)(gdr_CUhandle, gdr_CUdevice, size_t, size_t);
} gdr_cudrv;

// gdr_cudrv_bind resolves every entry point; it returns the name of the
// first required one missing, or NULL.
const char *gdr_cudrv_bind(gdr_cudrv *l, void *handle);

// The steps of the probe that work on one GPU make its primary context
// current first, inside the same C call, on the probe's one thread.
gdr_CUresult gdr_cudrv_mem_create(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUdevice dev, size_t size, gdr_CUhandle *h);
gdr_CUresult gdr_cudrv_mem_granularity(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUdevice dev, size_t *gran);
gdr_CUresult gdr_cudrv_mc_granularity(gdr_cudrv *l, gdr_CUcontext ctx, unsigned int ndev, size_t size, size_t *gran);
gdr_CUresult gdr_cudrv_mc_create(gdr_cudrv *l, gdr_CUcontext ctx, unsigned int ndev, size_t size, gdr_CUhandle *mc);
gdr_CUresult gdr_cudrv_mc_add(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUhandle mc, gdr_CUdevice dev);
gdr_CUresult gdr_cudrv_mc_bind(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUhandle mc, gdr_CUhandle mem, size_t size);
gdr_CUresult gdr_cudrv_mc_unbind(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUhandle mc, gdr_CUdevice dev, size_t size);
gdr_CUresult gdr_cudrv_mem_release(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUhandle h);

#endif
