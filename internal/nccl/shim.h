// Our own declarations of the NCCL entry points gdrcheck uses; libnccl.so.2
// is dlopen'ed at run time, so no nccl.h is needed to build.
#ifndef GDR_NCCL_SHIM_H
#define GDR_NCCL_SHIM_H
#include <stddef.h>

typedef int gdr_ncclResult;

typedef struct gdr_nccl {
	void *h;
	gdr_ncclResult (*GetVersion)(int *);
	const char *(*GetErrorString)(gdr_ncclResult);
	const char *(*GetLastError)(void *);
} gdr_nccl;

const char *gdr_nccl_bind(gdr_nccl *l, void *handle);

static inline gdr_ncclResult gdr_nccl_version(gdr_nccl *l, int *v) { return l->GetVersion(v); }
static inline const char *gdr_nccl_errstr(gdr_nccl *l, gdr_ncclResult r) { return l->GetErrorString(r); }

#endif
