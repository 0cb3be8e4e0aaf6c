#include <dlfcn.h>
#include "shim.h"

#define BIND(field, sym)                            \
	do {                                            \
		*(void **)(&l->field) = dlsym(handle, sym); \
		if (!l->field) return sym;                  \
	} while (0)

const char *gdr_nccl_bind(gdr_nccl *l, void *handle) {
	l->h = handle;
	BIND(GetVersion, "ncclGetVersion");
	BIND(GetErrorString, "ncclGetErrorString");
	// ncclGetLastError arrived in 2.13; optional.
	*(void **)(&l->GetLastError) = dlsym(handle, "ncclGetLastError");
	return 0;
}
