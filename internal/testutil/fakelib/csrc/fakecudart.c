// A fake CUDA runtime for tests on machines without a GPU: every entry
// point gdrcheck binds, with "device memory" in host memory and work done
// synchronously at enqueue time. Behaviour is steered by environment
// variables read at call time:
//   FAKECUDA_DEVICES    number of devices (default 1; 0 = no device)
//   FAKECUDA_VERSION    runtime version (default 13000)
//   FAKECUDA_DRIVER     driver version (default 13000)
//   FAKECUDA_MEM        device memory in bytes (default 1 GiB); larger allocations fail
//   FAKECUDA_BUSY       1: the devices are in use by another process (exclusive mode)
//   FAKECUDA_OOM        1: every cudaMalloc fails with out of memory
//   FAKECUDA_HANG       1: streams never become idle (a hung kernel)
//   FAKECUDA_WEDGE      a file name: while that file exists, cudaStreamQuery
//                       does not return (a driver call that never comes back)
//   FAKECUDA_NOPEER     1: no peer access between devices
#define _GNU_SOURCE
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int envint(const char *name, int def) {
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

static long long envll(const char *name, long long def) {
	const char *v = getenv(name);
	return v && *v ? atoll(v) : def;
}

static __thread int cur_dev = 0;
static long long used[64];

static int ndev(void) { return envint("FAKECUDA_DEVICES", 1); }

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cudaRuntimeGetVersion(int *v) { *v = envint("FAKECUDA_VERSION", 13000); return 0; }
int cudaDriverGetVersion(int *v) { *v = envint("FAKECUDA_DRIVER", 13000); return 0; }

const char *cudaGetErrorName(int e) {
	switch (e) {
	case 0: return "cudaSuccess";
	case 1: return "cudaErrorInvalidValue";
	case 2: return "cudaErrorMemoryAllocation";
	case 46: return "cudaErrorDevicesUnavailable";
	case 100: return "cudaErrorNoDevice";
	case 101: return "cudaErrorInvalidDevice";
	case 600: return "cudaErrorNotReady";
	case 704: return "cudaErrorPeerAccessAlreadyEnabled";
	}
	return "cudaErrorUnknown";
}

const char *cudaGetErrorString(int e) {
	switch (e) {
	case 0: return "no error";
	case 1: return "invalid argument";
	case 2: return "out of memory";
	case 46: return "CUDA-capable device(s) is/are busy or unavailable";
	case 100: return "no CUDA-capable device is detected";
	case 101: return "invalid device ordinal";
	case 600: return "device not ready";
	case 704: return "peer access is already enabled";
	}
	return "unknown error";
}

static int last_error = 0;
static int fail(int e) { last_error = e; return e; }
int cudaGetLastError(void) { int e = last_error; last_error = 0; return e; }

int cudaGetDeviceCount(int *n) {
	*n = ndev();
	if (*n == 0) return fail(100);
	return 0;
}

static int bad_dev(int dev) { return dev < 0 || dev >= ndev() || dev >= 64; }

int cudaSetDevice(int dev) {
	if (bad_dev(dev)) return fail(101);
	if (envint("FAKECUDA_BUSY", 0)) return fail(46);
	cur_dev = dev;
	return 0;
}

int cudaDeviceSynchronize(void) { return 0; }

int cudaDeviceGetPCIBusId(char *buf, int len, int dev) {
	if (bad_dev(dev)) return fail(101);
	snprintf(buf, len, "0000:%02X:00.0", 0x18 + dev);
	return 0;
}

int cudaMemGetInfo(size_t *free, size_t *total) {
	long long mem = envll("FAKECUDA_MEM", 1LL << 30);
	*total = mem;
	*free = mem - used[cur_dev];
	return 0;
}

// Each allocation carries its size in front, so cudaFree can account it.
int cudaMalloc(void **p, size_t n) {
	if (envint("FAKECUDA_BUSY", 0)) return fail(46);
	if (envint("FAKECUDA_OOM", 0)) return fail(2);
	long long mem = envll("FAKECUDA_MEM", 1LL << 30);
	if ((long long)n + used[cur_dev] > mem) return fail(2);
	char *b = malloc(n + 64);
	if (!b) return fail(2);
	((size_t *)b)[0] = n;
	((int *)b)[2] = cur_dev;
	used[cur_dev] += n;
	*p = b + 64;
	return 0;
}

int cudaFree(void *p) {
	if (!p) return 0;
	char *b = (char *)p - 64;
	used[((int *)b)[2]] -= ((size_t *)b)[0];
	free(b);
	return 0;
}

int cudaHostAlloc(void **p, size_t n, unsigned int flags) {
	(void)flags;
	*p = malloc(n ? n : 1);
	return *p ? 0 : fail(2);
}

int cudaFreeHost(void *p) { free(p); return 0; }

int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
	(void)kind;
	memmove(dst, src, n);
	return 0;
}

int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
	(void)stream;
	return cudaMemcpy(dst, src, n, kind);
}

int cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n, void *stream) {
	(void)stream;
	if (bad_dev(dd) || bad_dev(sd)) return fail(101);
	memmove(dst, src, n);
	return 0;
}

int cudaMemset(void *p, int v, size_t n) { memset(p, v, n); return 0; }

int cudaStreamCreateWithFlags(void **s, unsigned int flags) {
	(void)flags;
	*s = malloc(16);
	return 0;
}

int cudaStreamDestroy(void *s) { free(s); return 0; }

int cudaStreamQuery(void *s) {
	(void)s;
	const char *wedge = getenv("FAKECUDA_WEDGE");
	while (wedge && *wedge && access(wedge, F_OK) == 0) usleep(1000);
	return envint("FAKECUDA_HANG", 0) ? 600 : 0;
}

int cudaEventCreateWithFlags(void **e, unsigned int flags) {
	(void)flags;
	*e = calloc(1, sizeof(double));
	return 0;
}

int cudaEventDestroy(void *e) { free(e); return 0; }
int cudaEventRecord(void *e, void *s) { (void)s; *(double *)e = now(); return 0; }
int cudaStreamWaitEvent(void *s, void *e, unsigned int f) { (void)s; (void)e; (void)f; return 0; }

int cudaEventElapsedTime(float *ms, void *a, void *b) {
	*ms = (float)((*(double *)b - *(double *)a) * 1e3);
	return 0;
}

int cudaDeviceCanAccessPeer(int *v, int a, int b) {
	if (bad_dev(a) || bad_dev(b)) return fail(101);
	*v = a != b && !envint("FAKECUDA_NOPEER", 0);
	return 0;
}

int cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
	(void)flags;
	if (bad_dev(peer)) return fail(101);
	return 0;
}
