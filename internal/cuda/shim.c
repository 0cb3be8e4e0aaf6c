#include <dlfcn.h>
#include "shim.h"

#define BIND(field, sym)                    \
	do {                                    \
		*(void **)(&l->field) = dlsym(handle, sym); \
		if (!l->field) return sym;          \
	} while (0)

const char *gdr_cudart_bind(gdr_cudart *l, void *handle) {
	l->h = handle;
	BIND(RuntimeGetVersion, "cudaRuntimeGetVersion");
	BIND(DriverGetVersion, "cudaDriverGetVersion");
	BIND(GetErrorString, "cudaGetErrorString");
	BIND(GetErrorName, "cudaGetErrorName");
	BIND(GetDeviceCount, "cudaGetDeviceCount");
	BIND(DeviceGetPCIBusId, "cudaDeviceGetPCIBusId");
	BIND(DeviceGetAttribute, "cudaDeviceGetAttribute");
	return 0;
}
