#include <string.h>
#include "shim.h"

#define SYM(f) GDR_SYM(gdr_cudrv, "cu", f)
#define OPT(f) GDR_SYM_OPTIONAL(gdr_cudrv, "cu", f)

static const gdr_sym cudrv_syms[] = {
	SYM(Init),
	SYM(DriverGetVersion),
	SYM(GetErrorName),
	SYM(GetErrorString),
	SYM(DeviceGetCount),
	SYM(DeviceGet),
	SYM(DeviceGetAttribute),
	SYM(DeviceGetPCIBusId),
	SYM(DevicePrimaryCtxRetain),
	SYM(DevicePrimaryCtxRelease_v2),
	SYM(CtxSetCurrent),
	SYM(MemGetAllocationGranularity),
	SYM(MemCreate),
	SYM(MemRelease),
	OPT(MulticastGetGranularity),
	OPT(MulticastCreate),
	OPT(MulticastAddDevice),
	OPT(MulticastBindMem),
	OPT(MulticastUnbind),
};

const char *gdr_cudrv_bind(gdr_cudrv *l, void *handle) {
	l->h = handle;
	return gdr_bind(handle, l, cudrv_syms, sizeof cudrv_syms / sizeof cudrv_syms[0]);
}

static void mem_prop(gdr_CUmemAllocationProp *p, gdr_CUdevice dev) {
	memset(p, 0, sizeof *p);
	p->type = GDR_CU_MEM_ALLOCATION_TYPE_PINNED;
	p->requestedHandleTypes = GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	p->location.type = GDR_CU_MEM_LOCATION_TYPE_DEVICE;
	p->location.id = dev;
}

static void mc_prop(gdr_CUmulticastObjectProp *p, unsigned int ndev, size_t size) {
	memset(p, 0, sizeof *p);
	p->numDevices = ndev;
	p->size = size;
	p->handleTypes = GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	p->flags = 0;
}

gdr_CUresult gdr_cudrv_mem_granularity(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUdevice dev, size_t *gran) {
	gdr_CUmemAllocationProp p;
	gdr_CUresult e = l->CtxSetCurrent(ctx);
	if (e) return e;
	mem_prop(&p, dev);
	return l->MemGetAllocationGranularity(gran, &p, GDR_CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

gdr_CUresult gdr_cudrv_mem_create(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUdevice dev, size_t size, gdr_CUhandle *h) {
	gdr_CUmemAllocationProp p;
	gdr_CUresult e = l->CtxSetCurrent(ctx);
	if (e) return e;
	mem_prop(&p, dev);
	return l->MemCreate(h, size, &p, 0);
}

gdr_CUresult gdr_cudrv_mc_granularity(gdr_cudrv *l, gdr_CUcontext ctx, unsigned int ndev, size_t size, size_t *gran) {
	gdr_CUmulticastObjectProp p;
	gdr_CUresult e;
	if (!l->MulticastGetGranularity) return GDR_NOSYM;
	if ((e = l->CtxSetCurrent(ctx))) return e;
	mc_prop(&p, ndev, size);
	return l->MulticastGetGranularity(gran, &p, GDR_CU_MULTICAST_GRANULARITY_MINIMUM);
}

gdr_CUresult gdr_cudrv_mc_create(gdr_cudrv *l, gdr_CUcontext ctx, unsigned int ndev, size_t size, gdr_CUhandle *mc) {
	gdr_CUmulticastObjectProp p;
	gdr_CUresult e;
	if (!l->MulticastCreate) return GDR_NOSYM;
	if ((e = l->CtxSetCurrent(ctx))) return e;
	mc_prop(&p, ndev, size);
	return l->MulticastCreate(mc, &p);
}

gdr_CUresult gdr_cudrv_mc_add(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUhandle mc, gdr_CUdevice dev) {
	gdr_CUresult e;
	if (!l->MulticastAddDevice) return GDR_NOSYM;
	if ((e = l->CtxSetCurrent(ctx))) return e;
	return l->MulticastAddDevice(mc, dev);
}

gdr_CUresult gdr_cudrv_mc_bind(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUhandle mc, gdr_CUhandle mem, size_t size) {
	gdr_CUresult e;
	if (!l->MulticastBindMem) return GDR_NOSYM;
	if ((e = l->CtxSetCurrent(ctx))) return e;
	return l->MulticastBindMem(mc, 0, mem, 0, size, 0);
}

gdr_CUresult gdr_cudrv_mc_unbind(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUhandle mc, gdr_CUdevice dev, size_t size) {
	gdr_CUresult e;
	if (!l->MulticastUnbind) return GDR_NOSYM;
	if ((e = l->CtxSetCurrent(ctx))) return e;
	return l->MulticastUnbind(mc, dev, 0, size);
}

gdr_CUresult gdr_cudrv_mem_release(gdr_cudrv *l, gdr_CUcontext ctx, gdr_CUhandle h) {
	gdr_CUresult e = l->CtxSetCurrent(ctx);
	if (e) return e;
	return l->MemRelease(h);
}
