// Our own declarations of the CUDA runtime entry points gdrcheck uses. No
// CUDA header is needed at build time: the library is dlopen'ed at run time.
#ifndef GDR_CUDA_SHIM_H
#define GDR_CUDA_SHIM_H
#include <stddef.h>

typedef int gdr_cudaError;

typedef struct gdr_cudart {
	void *h;
	gdr_cudaError (*RuntimeGetVersion)(int *);
	gdr_cudaError (*DriverGetVersion)(int *);
	const char *(*GetErrorString)(gdr_cudaError);
	const char *(*GetErrorName)(gdr_cudaError);
	gdr_cudaError (*GetDeviceCount)(int *);
	gdr_cudaError (*DeviceGetPCIBusId)(char *, int, int);
	gdr_cudaError (*DeviceGetAttribute)(int *, int, int);
} gdr_cudart;

// gdr_cudart_bind resolves every entry point; it returns the name of the
// first one missing, or NULL.
const char *gdr_cudart_bind(gdr_cudart *l, void *handle);


// Thin wrappers so Go calls through the bound pointers.
static inline const char *gdr_err_name(gdr_cudart *l, gdr_cudaError e) { return l->GetErrorName(e); }
static inline const char *gdr_err_string(gdr_cudart *l, gdr_cudaError e) { return l->GetErrorString(e); }
static inline gdr_cudaError gdr_runtime_version(gdr_cudart *l, int *v) { return l->RuntimeGetVersion(v); }
static inline gdr_cudaError gdr_driver_version(gdr_cudart *l, int *v) { return l->DriverGetVersion(v); }
static inline gdr_cudaError gdr_device_count(gdr_cudart *l, int *n) { return l->GetDeviceCount(n); }
static inline gdr_cudaError gdr_pci_bus_id(gdr_cudart *l, char *b, int n, int d) { return l->DeviceGetPCIBusId(b, n, d); }

#endif
