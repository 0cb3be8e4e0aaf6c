#include "shim.h"

#define SYM(f) GDR_SYM(gdr_cudart, "cuda", f)

static const gdr_sym cudart_syms[] = {
	SYM(RuntimeGetVersion),
	SYM(DriverGetVersion),
	SYM(GetErrorString),
	SYM(GetErrorName),
	SYM(GetLastError),
	SYM(GetDeviceCount),
	SYM(DeviceGetPCIBusId),
	SYM(SetDevice),
	SYM(DeviceSynchronize),
	SYM(MemGetInfo),
	SYM(Malloc),
	SYM(Free),
	SYM(HostAlloc),
	SYM(FreeHost),
	SYM(Memcpy),
	SYM(MemcpyAsync),
	SYM(MemcpyPeerAsync),
	SYM(Memset),
	SYM(StreamCreateWithFlags),
	SYM(StreamDestroy),
	SYM(StreamQuery),
	SYM(EventCreateWithFlags),
	SYM(EventDestroy),
	SYM(EventRecord),
	SYM(EventElapsedTime),
	SYM(StreamWaitEvent),
	SYM(DeviceCanAccessPeer),
	SYM(DeviceEnablePeerAccess),
};

const char *gdr_cudart_bind(gdr_cudart *l, void *handle) {
	l->h = handle;
	return gdr_bind(handle, l, cudart_syms, sizeof cudart_syms / sizeof cudart_syms[0]);
}

int gdr_copy_timed(gdr_cudart *l, int dev, void *dst, const void *src, size_t bytes, int kind,
                   int dst_dev, int src_dev, gdr_stream s,
                   void *rev_dst, const void *rev_src, gdr_stream s2,
                   int iters, double deadline, int *cancel, float *ms) {
	gdr_event a = 0, b = 0, j = 0;
	// The reverse direction's kind, decided once, not per copy.
	int rk = kind == GDR_cudaMemcpyHostToDevice ? GDR_cudaMemcpyDeviceToHost : kind == GDR_cudaMemcpyDeviceToHost ? GDR_cudaMemcpyHostToDevice : kind;
	int e = l->SetDevice(dev);
	if (e) return e;
	if ((e = l->EventCreateWithFlags(&a, GDR_cudaEventDefault))) return e;
	if ((e = l->EventCreateWithFlags(&b, GDR_cudaEventDefault))) goto out;
	if ((e = l->EventCreateWithFlags(&j, GDR_cudaEventDefault))) goto out;
	if ((e = l->EventRecord(a, s))) goto out;
	// The reverse stream starts with the forward one.
	if (rev_dst && (e = l->StreamWaitEvent(s2, a, 0))) goto out;
	for (int i = 0; i < iters; i++) {
		if (kind < 0) {
			e = l->MemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, s);
			if (!e && rev_dst) e = l->MemcpyPeerAsync(rev_dst, src_dev, rev_src, dst_dev, bytes, s2);
		} else {
			e = l->MemcpyAsync(dst, src, bytes, kind, s);
			if (!e && rev_dst) e = l->MemcpyAsync(rev_dst, rev_src, bytes, rk, s2);
		}
		if (e) goto out;
	}
	// The interval ends when both directions are done.
	if (rev_dst) {
		if ((e = l->EventRecord(j, s2))) goto out;
		if ((e = l->StreamWaitEvent(s, j, 0))) goto out;
	}
	if ((e = l->EventRecord(b, s))) goto out;
	if ((e = gdr_stream_wait(l, dev, s, deadline, cancel, 0, 0))) goto out;
	e = l->EventElapsedTime(ms, a, b);
out:
	if (a) l->EventDestroy(a);
	if (b) l->EventDestroy(b);
	if (j) l->EventDestroy(j);
	return e;
}
