// Shared by the cgo shims of package cuda and package nccl: resolving a
// table of entry points with dlsym, and the flags Go raises while a C loop
// spins on another thread.
#ifndef GDR_DL_BIND_H
#define GDR_DL_BIND_H
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

// gdr_sym names one entry point: the symbol, where its pointer goes in
// the table, and whether the library may lack it (the pointer stays NULL).
typedef struct {
	const char *sym;
	size_t off;
	int optional;
} gdr_sym;

// GDR_SYM(table type, prefix, field) is the entry point prefix##field,
// stored in the table's field of that name: GDR_SYM(gdr_cudart, "cuda",
// Malloc) is cudaMalloc.
#define GDR_SYM(type, prefix, field) {prefix #field, offsetof(type, field), 0}
#define GDR_SYM_OPTIONAL(type, prefix, field) {prefix #field, offsetof(type, field), 1}

// gdr_bind resolves every entry point of syms into table; it returns the
// name of the first required one missing, or NULL.
static inline const char *gdr_bind(void *handle, void *table, const gdr_sym *syms, size_t n) {
	for (size_t i = 0; i < n; i++) {
		void *p = dlsym(handle, syms[i].sym);
		if (!p && !syms[i].optional) return syms[i].sym;
		memcpy((char *)table + syms[i].off, &p, sizeof p);
	}
	return 0;
}

// gdr_flag reads a flag another thread raises (Go's atomic.StoreInt32 on
// the same C int): an atomic load, never a plain or volatile read.
static inline int gdr_flag(int *f) { return f && __atomic_load_n(f, __ATOMIC_ACQUIRE); }

#endif
