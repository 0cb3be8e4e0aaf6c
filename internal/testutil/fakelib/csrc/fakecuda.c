// A fake CUDA driver library (libcuda.so.1) for tests on machines without
// a GPU: the entry points of gdrcheck's multicast probe, keeping the
// rules the probe must follow (a context current for the GPU it works on,
// every GPU added before memory is bound, sizes in granularity, handles
// released). Behaviour is steered by environment variables read at call
// time:
//   FAKECU_DEVICES    number of GPUs (default 1)
//   FAKECU_VERSION    cuDriverGetVersion (default 13000)
//   FAKECU_MULTICAST  CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED per GPU,
//                     comma-separated, the last repeated (default 1)
//   FAKECU_MC_GRAN    multicast granularity in bytes (default 2 MiB)
//   FAKECU_FAIL       call[@gpu]=code,...: that call (on that GPU, or on
//                     any) returns code, e.g. cuMulticastBindMem@1=401
//   FAKECU_HANG       call[@gpu]: that call does not return while the file
//                     FAKECU_HANG_FILE exists
//   FAKECU_LOG        a file each call appends "call gpu result" to
// Built with -DFAKECU_OLD it is a driver before CUDA 12.1: no multicast
// entry points. Where the real driver blocks (a bind before every GPU was
// added) this one returns CUDA_ERROR_ILLEGAL_STATE, so a wrong order shows
// as a failure, not a hang.
#define _GNU_SOURCE
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>

static int envint(const char *name, int def) {
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

static int ndev(void) { return envint("FAKECU_DEVICES", 1); }

static int initialized;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

// Contexts are the addresses of these; the current one is per thread.
static int ctxs[64];
static int retained[64];
static __thread int *cur;

static void logf_(const char *call, int dev, int r) {
	const char *p = getenv("FAKECU_LOG");
	if (!p || !*p) return;
	FILE *f = fopen(p, "a");
	if (!f) return;
	fprintf(f, "%s %d %d\n", call, dev, r);
	fclose(f);
}

// steered is the code FAKECU_FAIL sets for call on dev (0: none); it
// also blocks while FAKECU_HANG names the call.
static int steered(const char *call, int dev) {
	const char *h = getenv("FAKECU_HANG"), *file = getenv("FAKECU_HANG_FILE");
	if (h && *h && file && *file) {
		char want[128];
		snprintf(want, sizeof want, "%s@%d", call, dev);
		if (!strcmp(h, call) || !strcmp(h, want))
			while (access(file, F_OK) == 0) usleep(1000);
	}
	const char *f = getenv("FAKECU_FAIL");
	if (!f || !*f) return 0;
	char *s = strdup(f), *save = 0;
	int code = 0;
	for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(0, ",", &save)) {
		char *eq = strchr(t, '=');
		if (!eq) continue;
		*eq = 0;
		char *at = strchr(t, '@');
		int d = -2;
		if (at) { *at = 0; d = atoi(at + 1); }
		if (!strcmp(t, call) && (d == -2 || d == dev)) { code = atoi(eq + 1); break; }
	}
	free(s);
	return code;
}

#define RET(call, dev, r) do { int r_ = (r); logf_(call, dev, r_); return r_; } while (0)
#define STEER(call, dev) do { int c_ = steered(call, dev); if (c_) RET(call, dev, c_); } while (0)

int cuInit(unsigned int flags) {
	if (flags) RET("cuInit", -1, 1);
	STEER("cuInit", -1);
	initialized = 1;
	RET("cuInit", -1, ndev() ? 0 : 100);
}

#define NEEDINIT(call, dev) do { if (!initialized) RET(call, dev, 3); } while (0)

int cuDriverGetVersion(int *v) { *v = envint("FAKECU_VERSION", 13000); return 0; }

int cuGetErrorName(int e, const char **s) {
	switch (e) {
	case 0: *s = "CUDA_SUCCESS"; return 0;
	case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
	case 3: *s = "CUDA_ERROR_NOT_INITIALIZED"; return 0;
	case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
	case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; return 0;
	case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
	case 400: *s = "CUDA_ERROR_INVALID_HANDLE"; return 0;
	case 401: *s = "CUDA_ERROR_ILLEGAL_STATE"; return 0;
	case 800: *s = "CUDA_ERROR_NOT_PERMITTED"; return 0;
	case 801: *s = "CUDA_ERROR_NOT_SUPPORTED"; return 0;
	case 802: *s = "CUDA_ERROR_SYSTEM_NOT_READY"; return 0;
	case 999: *s = "CUDA_ERROR_UNKNOWN"; return 0;
	}
	*s = 0;
	return 1;
}

int cuGetErrorString(int e, const char **s) {
	switch (e) {
	case 0: *s = "no error"; return 0;
	case 1: *s = "invalid argument"; return 0;
	case 2: *s = "out of memory"; return 0;
	case 3: *s = "initialization error"; return 0;
	case 100: *s = "no CUDA-capable device is detected"; return 0;
	case 101: *s = "invalid device ordinal"; return 0;
	case 201: *s = "invalid device context"; return 0;
	case 400: *s = "invalid resource handle"; return 0;
	case 401: *s = "the operation cannot be performed in the present state"; return 0;
	case 800: *s = "operation not permitted"; return 0;
	case 801: *s = "operation not supported"; return 0;
	case 802: *s = "system not yet initialized"; return 0;
	case 999: *s = "unknown error"; return 0;
	}
	*s = 0;
	return 1;
}

int cuDeviceGetCount(int *n) {
	NEEDINIT("cuDeviceGetCount", -1);
	*n = ndev();
	RET("cuDeviceGetCount", -1, 0);
}

static int bad(int d) { return d < 0 || d >= ndev() || d >= 64; }

int cuDeviceGet(int *d, int ord) {
	NEEDINIT("cuDeviceGet", ord);
	if (bad(ord)) RET("cuDeviceGet", ord, 101);
	STEER("cuDeviceGet", ord);
	*d = ord;
	RET("cuDeviceGet", ord, 0);
}

int cuDeviceGetPCIBusId(char *b, int n, int d) {
	NEEDINIT("cuDeviceGetPCIBusId", d);
	if (bad(d)) RET("cuDeviceGetPCIBusId", d, 101);
	snprintf(b, n, "0000:%02X:00.0", 0x18 + d);
	RET("cuDeviceGetPCIBusId", d, 0);
}

// multicast is FAKECU_MULTICAST's value for GPU d.
static int multicast(int d) {
	const char *v = getenv("FAKECU_MULTICAST");
	if (!v || !*v) return 1;
	int val = 1;
	const char *p = v;
	for (int i = 0; i <= d; i++) {
		val = atoi(p);
		const char *c = strchr(p, ',');
		if (!c) break;
		p = c + 1;
	}
	return val;
}

int cuDeviceGetAttribute(int *v, int attr, int d) {
	NEEDINIT("cuDeviceGetAttribute", d);
	if (bad(d)) RET("cuDeviceGetAttribute", d, 101);
	STEER("cuDeviceGetAttribute", d);
	if (attr != 132) RET("cuDeviceGetAttribute", d, 1); // only the one the probe asks
	*v = multicast(d);
	RET("cuDeviceGetAttribute", d, 0);
}

int cuDevicePrimaryCtxRetain(void **c, int d) {
	NEEDINIT("cuDevicePrimaryCtxRetain", d);
	if (bad(d)) RET("cuDevicePrimaryCtxRetain", d, 101);
	STEER("cuDevicePrimaryCtxRetain", d);
	pthread_mutex_lock(&mu);
	retained[d]++;
	pthread_mutex_unlock(&mu);
	*c = &ctxs[d];
	RET("cuDevicePrimaryCtxRetain", d, 0);
}

int cuDevicePrimaryCtxRelease_v2(int d) {
	if (bad(d)) RET("cuDevicePrimaryCtxRelease", d, 101);
	STEER("cuDevicePrimaryCtxRelease", d);
	pthread_mutex_lock(&mu);
	int r = retained[d] > 0 ? (retained[d]--, 0) : 401;
	pthread_mutex_unlock(&mu);
	RET("cuDevicePrimaryCtxRelease", d, r);
}

static int ctxdev(void *c) {
	if ((int *)c < ctxs || (int *)c >= ctxs + 64) return -1;
	int d = (int *)c - ctxs;
	return retained[d] > 0 ? d : -1;
}

int cuCtxSetCurrent(void *c) {
	if (c && ctxdev(c) < 0) return 201;
	cur = c;
	return 0;
}

static int curdev(void) { return cur ? ctxdev(cur) : -1; }

typedef struct {
	int type, requestedHandleTypes;
	struct { int type, id; } location;
	void *win32HandleMetaData;
	unsigned char flags[8];
} memprop;

typedef struct {
	unsigned int numDevices;
	size_t size;
	unsigned long long handleTypes, flags;
} mcprop;

#define GRAN (2u << 20)

// Handles are indices into this table, plus one.
enum { MEM = 1, MC = 2 };
static struct obj {
	int kind, dev, ndev, added, bound, mask;
	size_t size;
} objs[256];

static unsigned long long newobj(struct obj o) {
	pthread_mutex_lock(&mu);
	for (int i = 0; i < 256; i++)
		if (!objs[i].kind) { objs[i] = o; pthread_mutex_unlock(&mu); return i + 1; }
	pthread_mutex_unlock(&mu);
	return 0;
}

static struct obj *get(unsigned long long h, int kind) {
	if (h < 1 || h > 256 || objs[h - 1].kind != kind) return 0;
	return &objs[h - 1];
}

static int memprop_ok(const memprop *p) {
	return p->type == 1 && p->location.type == 1 && !bad(p->location.id) && !p->win32HandleMetaData &&
	       (p->requestedHandleTypes & ~0xf) == 0;
}

int cuMemGetAllocationGranularity(size_t *g, const memprop *p, int opt) {
	if (!memprop_ok(p) || (opt != 0 && opt != 1)) RET("cuMemGetAllocationGranularity", -1, 1);
	*g = GRAN;
	RET("cuMemGetAllocationGranularity", p->location.id, 0);
}

int cuMemCreate(unsigned long long *h, size_t size, const memprop *p, unsigned long long flags) {
	NEEDINIT("cuMemCreate", -1);
	if (!memprop_ok(p) || flags || !size || size % GRAN) RET("cuMemCreate", -1, 1);
	int d = p->location.id;
	if (curdev() != d) RET("cuMemCreate", d, 201);
	STEER("cuMemCreate", d);
	*h = newobj((struct obj){.kind = MEM, .dev = d, .size = size});
	RET("cuMemCreate", d, *h ? 0 : 2);
}

int cuMemRelease(unsigned long long h) {
	struct obj *o = get(h, MEM);
	if (!o) o = get(h, MC);
	if (!o) RET("cuMemRelease", -1, 1);
	int d = o->kind == MEM ? o->dev : -1;
	if (o->kind == MC && o->bound) RET("cuMemRelease", d, 401);
	STEER(o->kind == MC ? "cuMemRelease(multicast)" : "cuMemRelease", d);
	o->kind = 0;
	RET(d < 0 ? "cuMemRelease(multicast)" : "cuMemRelease", d, 0);
}

#ifndef FAKECU_OLD
static size_t mcgran(void) { return (size_t)envint("FAKECU_MC_GRAN", GRAN); }

static int mcprop_ok(const mcprop *p) {
	return p->numDevices > 0 && (int)p->numDevices <= ndev() && p->size > 0 && p->flags == 0 && (p->handleTypes & ~0xfULL) == 0;
}

int cuMulticastGetGranularity(size_t *g, const mcprop *p, int opt) {
	NEEDINIT("cuMulticastGetGranularity", -1);
	if (!mcprop_ok(p) || (opt != 0 && opt != 1)) RET("cuMulticastGetGranularity", -1, 1);
	STEER("cuMulticastGetGranularity", -1);
	*g = mcgran();
	RET("cuMulticastGetGranularity", -1, 0);
}

int cuMulticastCreate(unsigned long long *h, const mcprop *p) {
	NEEDINIT("cuMulticastCreate", -1);
	if (!mcprop_ok(p) || p->size % mcgran()) RET("cuMulticastCreate", -1, 1);
	for (int d = 0; d < ndev(); d++)
		if (!multicast(d)) RET("cuMulticastCreate", -1, 801);
	STEER("cuMulticastCreate", -1);
	*h = newobj((struct obj){.kind = MC, .ndev = p->numDevices, .size = p->size});
	RET("cuMulticastCreate", -1, *h ? 0 : 2);
}

int cuMulticastAddDevice(unsigned long long h, int d) {
	struct obj *o = get(h, MC);
	if (!o || bad(d)) RET("cuMulticastAddDevice", d, 1);
	if (o->mask & (1 << d) || o->added >= o->ndev || o->bound) RET("cuMulticastAddDevice", d, 401);
	STEER("cuMulticastAddDevice", d);
	o->mask |= 1 << d;
	o->added++;
	RET("cuMulticastAddDevice", d, 0);
}

int cuMulticastBindMem(unsigned long long mc, size_t mcoff, unsigned long long mem, size_t memoff, size_t size, unsigned long long flags) {
	struct obj *o = get(mc, MC), *m = get(mem, MEM);
	if (!o || !m || flags || mcoff || memoff || size != m->size || size > o->size) RET("cuMulticastBindMem", -1, 1);
	if (!(o->mask & (1 << m->dev))) RET("cuMulticastBindMem", m->dev, 101);
	if (o->added < o->ndev) RET("cuMulticastBindMem", m->dev, 401);
	if (curdev() != m->dev) RET("cuMulticastBindMem", m->dev, 201);
	STEER("cuMulticastBindMem", m->dev);
	o->bound++;
	m->bound = 1;
	RET("cuMulticastBindMem", m->dev, 0);
}

int cuMulticastUnbind(unsigned long long mc, int d, size_t off, size_t size) {
	struct obj *o = get(mc, MC);
	if (!o || bad(d) || off || size > o->size || o->bound == 0) RET("cuMulticastUnbind", d, 1);
	STEER("cuMulticastUnbind", d);
	o->bound--;
	RET("cuMulticastUnbind", d, 0);
}
#endif
