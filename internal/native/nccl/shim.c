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
	BIND(GetUniqueId, "ncclGetUniqueId");
	BIND(CommInitRank, "ncclCommInitRank");
	BIND(CommInitAll, "ncclCommInitAll");
	BIND(CommDestroy, "ncclCommDestroy");
	BIND(CommAbort, "ncclCommAbort");
	BIND(CommGetAsyncError, "ncclCommGetAsyncError");
	BIND(CommUserRank, "ncclCommUserRank");
	BIND(GroupStart, "ncclGroupStart");
	BIND(GroupEnd, "ncclGroupEnd");
	BIND(AllReduce, "ncclAllReduce");
	BIND(Broadcast, "ncclBroadcast");
	BIND(Reduce, "ncclReduce");
	BIND(AllGather, "ncclAllGather");
	BIND(ReduceScatter, "ncclReduceScatter");
	BIND(Send, "ncclSend");
	BIND(Recv, "ncclRecv");
	// Optional entry points.
	*(void **)(&l->GetLastError) = dlsym(handle, "ncclGetLastError");
	*(void **)(&l->AlltoAll) = dlsym(handle, "ncclAlltoAll");
	*(void **)(&l->MemAlloc) = dlsym(handle, "ncclMemAlloc");
	*(void **)(&l->MemFree) = dlsym(handle, "ncclMemFree");
	if (!l->MemAlloc || !l->MemFree) l->MemAlloc = 0, l->MemFree = 0;
	return 0;
}

int gdr_nccl_mem_alloc(gdr_nccl *n, gdr_cudart *c, int dev, void **p, size_t bytes) {
	int e = c->SetDevice(dev);
	if (e) return e;
	e = n->MemAlloc(p, bytes);
	return e ? 1000 + e : 0;
}

int gdr_nccl_mem_free(gdr_nccl *n, gdr_cudart *c, int dev, void *p) {
	int e = c->SetDevice(dev);
	if (e) return e;
	e = n->MemFree(p);
	return e ? 1000 + e : 0;
}

static int one(gdr_nccl *n, const gdr_op *op, gdr_rank *r, size_t shift) {
	char *recv = r->recv + shift;
	char *send = (op->inplace ? r->recv : r->send) + shift;
	if (op->inplace) {
		send += op->send_inplace_off * (size_t)r->rank;
		recv += op->recv_inplace_off * (size_t)r->rank;
	}
	switch (op->coll) {
	case GDR_ALL_REDUCE:
		return n->AllReduce(send, recv, op->count, op->dtype, op->redop, r->comm, r->stream);
	case GDR_ALL_GATHER:
		return n->AllGather(send, recv, op->count, op->dtype, r->comm, r->stream);
	case GDR_REDUCE_SCATTER:
		return n->ReduceScatter(send, recv, op->count, op->dtype, op->redop, r->comm, r->stream);
	case GDR_BROADCAST:
		return n->Broadcast(send, recv, op->count, op->dtype, op->root, r->comm, r->stream);
	case GDR_REDUCE:
		return n->Reduce(send, recv, op->count, op->dtype, op->redop, op->root, r->comm, r->stream);
	case GDR_ALLTOALL: {
		if (n->AlltoAll) return n->AlltoAll(send, recv, op->count, op->dtype, r->comm, r->stream);
		size_t chunk = op->count * op->elt;
		int e = n->GroupStart();
		for (int p = 0; !e && p < op->nranks; p++) {
			e = n->Send(send + p * chunk, op->count, op->dtype, p, r->comm, r->stream);
			if (!e) e = n->Recv(recv + p * chunk, op->count, op->dtype, p, r->comm, r->stream);
		}
		int g = n->GroupEnd();
		return e ? e : g;
	}
	case GDR_SENDRECV: {
		int to = (r->rank + 1) % op->nranks;
		int from = (r->rank - 1 + op->nranks) % op->nranks;
		int e = n->GroupStart();
		if (!e) e = n->Send(send, op->count, op->dtype, to, r->comm, r->stream);
		if (!e) e = n->Recv(recv, op->count, op->dtype, from, r->comm, r->stream);
		int g = n->GroupEnd();
		return e ? e : g;
	}
	}
	return 4; // ncclInvalidArgument
}

int gdr_nccl_enqueue(gdr_nccl *n, const gdr_op *op, gdr_rank *ranks, int nlocal, int first, int iters, volatile int *cancel) {
	// Successive iterations use different parts of the buffers, as
	// nccl-tests does, so small operations do not run from cache.
	size_t steps = op->total_bytes ? op->max_bytes / op->total_bytes : 1;
	if (steps == 0) steps = 1;
	// No cudaSetDevice per launch: NCCL takes the device from the
	// communicator (nccl-tests does not set it either), and the call costs
	// a fraction of a microsecond that small operations would carry.
	for (int it = first; it < first + iters; it++) {
		size_t shift = op->total_bytes * ((size_t)it % steps);
		int e = 0;
		if (nlocal > 1 && (e = n->GroupStart())) return 1000 + e;
		for (int i = 0; i < nlocal; i++) {
			if ((e = one(n, op, &ranks[i], shift))) {
				if (nlocal > 1) n->GroupEnd();
				return 1000 + e;
			}
		}
		if (nlocal > 1 && (e = n->GroupEnd())) return 1000 + e;
		if (cancel && *cancel) return -2;
	}
	return 0;
}

// async_error is gdr_stream_wait's poll: a communicator's asynchronous error.
typedef struct {
	gdr_nccl *n;
	gdr_ncclComm comm;
} async_arg;

static int async_error(void *p) {
	async_arg *a = p;
	gdr_ncclResult ar = 0;
	int e = a->n->CommGetAsyncError(a->comm, &ar);
	if (e) return 1000 + e;
	if (ar != GDR_ncclSuccess && ar != GDR_ncclInProgress) return 1000 + ar;
	return 0;
}

int gdr_nccl_wait(gdr_nccl *n, gdr_cudart *c, gdr_rank *ranks, int nlocal, double deadline, volatile int *cancel, int *bad) {
	for (int i = 0; i < nlocal; i++) {
		*bad = i;
		async_arg a = {n, ranks[i].comm};
		int e = gdr_stream_wait(c, ranks[i].dev, ranks[i].stream, deadline, cancel, async_error, &a);
		if (e) return e;
	}
	*bad = -1;
	return 0;
}

int gdr_nccl_timed(gdr_nccl *n, gdr_cudart *c, const gdr_op *op, gdr_rank *ranks, int nlocal, int iters,
                   double deadline, volatile int *cancel, double *sec, int *bad) {
	*bad = -1;
	double t0 = gdr_now();
	int e = gdr_nccl_enqueue(n, op, ranks, nlocal, 0, iters, cancel);
	if (e) return e;
	e = gdr_nccl_wait(n, c, ranks, nlocal, deadline, cancel, bad);
	*sec = gdr_now() - t0;
	return e;
}
