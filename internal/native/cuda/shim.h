// Our own declarations of the CUDA runtime entry points gdrcheck uses. No
// CUDA header is needed at build time: the library is dlopen'ed at run time
// and every entry point is resolved by name into this table.
#ifndef GDR_CUDA_SHIM_H
#define GDR_CUDA_SHIM_H
#include <stddef.h>
#include <time.h>
#include <sched.h>
#include "../dl/bind.h"

typedef int gdr_cudaError;
typedef void *gdr_stream;
typedef void *gdr_event;

// Values of the CUDA runtime API (stable across 11.x-13.x).
enum {
	GDR_cudaSuccess = 0,
	GDR_cudaErrorNotReady = 600,
	GDR_cudaErrorPeerAccessAlreadyEnabled = 704,
	GDR_cudaMemcpyHostToDevice = 1,
	GDR_cudaMemcpyDeviceToHost = 2,
	GDR_cudaMemcpyDeviceToDevice = 3,
	GDR_cudaMemcpyDefault = 4,
	GDR_cudaStreamNonBlocking = 1,
	GDR_cudaEventDefault = 0,
	GDR_cudaHostAllocPortable = 1,
};

typedef struct gdr_cudart {
	void *h;
	gdr_cudaError (*RuntimeGetVersion)(int *);
	gdr_cudaError (*DriverGetVersion)(int *);
	const char *(*GetErrorString)(gdr_cudaError);
	const char *(*GetErrorName)(gdr_cudaError);
	gdr_cudaError (*GetLastError)(void);
	gdr_cudaError (*GetDeviceCount)(int *);
	gdr_cudaError (*DeviceGetPCIBusId)(char *, int, int);
	gdr_cudaError (*SetDevice)(int);
	gdr_cudaError (*DeviceSynchronize)(void);
	gdr_cudaError (*MemGetInfo)(size_t *, size_t *);
	gdr_cudaError (*Malloc)(void **, size_t);
	gdr_cudaError (*Free)(void *);
	gdr_cudaError (*HostAlloc)(void **, size_t, unsigned int);
	gdr_cudaError (*FreeHost)(void *);
	gdr_cudaError (*Memcpy)(void *, const void *, size_t, int);
	gdr_cudaError (*MemcpyAsync)(void *, const void *, size_t, int, gdr_stream);
	gdr_cudaError (*MemcpyPeerAsync)(void *, int, const void *, int, size_t, gdr_stream);
	gdr_cudaError (*Memset)(void *, int, size_t);
	gdr_cudaError (*StreamCreateWithFlags)(gdr_stream *, unsigned int);
	gdr_cudaError (*StreamDestroy)(gdr_stream);
	gdr_cudaError (*StreamQuery)(gdr_stream);
	gdr_cudaError (*EventCreateWithFlags)(gdr_event *, unsigned int);
	gdr_cudaError (*EventDestroy)(gdr_event);
	gdr_cudaError (*EventRecord)(gdr_event, gdr_stream);
	gdr_cudaError (*EventElapsedTime)(float *, gdr_event, gdr_event);
	gdr_cudaError (*StreamWaitEvent)(gdr_stream, gdr_event, unsigned int);
	gdr_cudaError (*DeviceCanAccessPeer)(int *, int, int);
	gdr_cudaError (*DeviceEnablePeerAccess)(int, unsigned int);
} gdr_cudart;

// gdr_cudart_bind resolves every entry point; it returns the name of the
// first one missing, or NULL.
const char *gdr_cudart_bind(gdr_cudart *l, void *handle);

// gdr_now is CLOCK_MONOTONIC in seconds.
static inline double gdr_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// gdr_stream_wait spins on cudaStreamQuery (as nccl-tests does: blocking
// synchronisation adds latency to small operations) until the stream is
// idle, an error comes back, the deadline (gdr_now() seconds) passes
// (returns -1) or the cancel flag is raised (returns -2; read with
// gdr_flag: Go raises it from another thread). Every 256 spins it
// also calls poll (when not NULL), whose non-zero result it returns: the
// NCCL shim watches each communicator's asynchronous error that way.
// Between queries it yields the CPU, as nccl-tests' wait does: NCCL's own
// threads (proxy, and the work behind a self send/recv) get to run, which
// measured 0.3-1.5 us per small operation on the H200 VM (docs/device-runs.md).
// Header-inline so the NCCL shim shares it.
static inline int gdr_stream_wait(gdr_cudart *l, int dev, gdr_stream s, double deadline, int *cancel,
                                  int (*poll)(void *), void *arg) {
	int e = l->SetDevice(dev);
	if (e) return e;
	for (unsigned long spin = 0;; spin++) {
		e = l->StreamQuery(s);
		if (e == GDR_cudaSuccess) return 0;
		if (e != GDR_cudaErrorNotReady) return e;
		sched_yield();
		if ((spin & 255) == 0) {
			if (poll && (e = poll(arg))) return e;
			if (gdr_flag(cancel)) return -2;
			if (gdr_now() > deadline) return -1;
		}
	}
}

// gdr_copy_timed enqueues iters copies of bytes on a stream between two
// events and returns the elapsed milliseconds from the events. kind is a
// cudaMemcpyKind; peer copies use kind -1 with src_dev/dst_dev. A second
// copy in the other direction runs concurrently on stream2 when rev_dst is
// not NULL (bidirectional).
int gdr_copy_timed(gdr_cudart *l, int dev, void *dst, const void *src, size_t bytes, int kind,
                   int dst_dev, int src_dev, gdr_stream s,
                   void *rev_dst, const void *rev_src, gdr_stream s2,
                   int iters, double deadline, int *cancel, float *ms);

#endif
