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
	BIND(CommCount, "ncclCommCount");
	BIND(CommCuDevice, "ncclCommCuDevice");
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
	return 0;
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

int gdr_nccl_enqueue(gdr_nccl *n, gdr_cudart *c, const gdr_op *op, gdr_rank *ranks, int nlocal, int iter) {
	// Successive iterations use different parts of the buffers, as
	// nccl-tests does, so small operations do not run from cache.
	size_t steps = op->total_bytes ? op->max_bytes / op->total_bytes : 1;
	if (steps == 0) steps = 1;
	size_t shift = op->total_bytes * ((size_t)iter % steps);
	int e = 0;
	if (nlocal > 1 && (e = n->GroupStart())) return 1000 + e;
	// No cudaSetDevice per launch: NCCL takes the device from the
	// communicator (nccl-tests does not set it either), and the call costs
	// a fraction of a microsecond that small operations would carry.
	(void)c;
	for (int i = 0; i < nlocal; i++) {
		if ((e = one(n, op, &ranks[i], shift))) {
			if (nlocal > 1) n->GroupEnd();
			return 1000 + e;
		}
	}
	if (nlocal > 1 && (e = n->GroupEnd())) return 1000 + e;
	return 0;
}

int gdr_nccl_wait(gdr_nccl *n, gdr_cudart *c, gdr_rank *ranks, int nlocal, double deadline, volatile int *cancel, int *bad) {
	for (int i = 0; i < nlocal; i++) {
		*bad = i;
		int ce = c->SetDevice(ranks[i].dev);
		if (ce) return ce;
		for (unsigned long spin = 0;; spin++) {
			int q = c->StreamQuery(ranks[i].stream);
			if (q == GDR_cudaSuccess) break;
			if (q != GDR_cudaErrorNotReady) return q;
			if ((spin & 255) == 0) {
				gdr_ncclResult ar = 0;
				int e = n->CommGetAsyncError(ranks[i].comm, &ar);
				if (e) return 1000 + e;
				if (ar != GDR_ncclSuccess && ar != GDR_ncclInProgress) return 1000 + ar;
				if (cancel && *cancel) return -2;
				if (gdr_now() > deadline) return -1;
			}
		}
	}
	*bad = -1;
	return 0;
}

int gdr_nccl_timed(gdr_nccl *n, gdr_cudart *c, const gdr_op *op, gdr_rank *ranks, int nlocal, int iters,
                   double deadline, volatile int *cancel, double *sec, int *bad) {
	*bad = -1;
	double t0 = gdr_now();
	for (int it = 0; it < iters; it++) {
		int e = gdr_nccl_enqueue(n, c, op, ranks, nlocal, it);
		if (e) return e;
		if (cancel && *cancel) return -2;
	}
	int e = gdr_nccl_wait(n, c, ranks, nlocal, deadline, cancel, bad);
	*sec = gdr_now() - t0;
	return e;
}
