// A fake CUDA runtime for tests on machines without a GPU: the entry points
// gdrcheck binds, with "device memory" in host memory. Behaviour is steered
// by environment variables read at call time:
//   FAKECUDA_DEVICES   number of devices (default 1; 0 = no device)
//   FAKECUDA_VERSION   runtime version (default 13000)
//   FAKECUDA_DRIVER    driver version (default 13000)
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static int envint(const char *name, int def) {
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

int cudaRuntimeGetVersion(int *v) { *v = envint("FAKECUDA_VERSION", 13000); return 0; }
int cudaDriverGetVersion(int *v) { *v = envint("FAKECUDA_DRIVER", 13000); return 0; }

const char *cudaGetErrorName(int e) {
	switch (e) {
	case 0: return "cudaSuccess";
	case 2: return "cudaErrorMemoryAllocation";
	case 100: return "cudaErrorNoDevice";
	case 101: return "cudaErrorInvalidDevice";
	}
	return "cudaErrorUnknown";
}

const char *cudaGetErrorString(int e) {
	switch (e) {
	case 0: return "no error";
	case 2: return "out of memory";
	case 100: return "no CUDA-capable device is detected";
	case 101: return "invalid device ordinal";
	}
	return "unknown error";
}

int cudaGetDeviceCount(int *n) {
	*n = envint("FAKECUDA_DEVICES", 1);
	if (*n == 0) return 100;
	return 0;
}

int cudaDeviceGetPCIBusId(char *buf, int len, int dev) {
	if (dev < 0 || dev >= envint("FAKECUDA_DEVICES", 1)) return 101;
	snprintf(buf, len, "0000:%02X:00.0", 0x18 + dev);
	return 0;
}

int cudaDeviceGetAttribute(int *v, int attr, int dev) {
	if (dev < 0 || dev >= envint("FAKECUDA_DEVICES", 1)) return 101;
	*v = 0;
	return 0;
}
