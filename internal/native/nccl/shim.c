#include "shim.h"

#define SYM(f) GDR_SYM(gdr_nccl, "nccl", f)
#define OPTIONAL(f) GDR_SYM_OPTIONAL(gdr_nccl, "nccl", f)

static const gdr_sym nccl_syms[] = {
	SYM(GetVersion),
	SYM(GetErrorString),
	SYM(CommInitAll),
	SYM(GetUniqueId),
	SYM(CommInitRank),
	SYM(CommDestroy),
	SYM(CommAbort),
	SYM(CommGetAsyncError),
	SYM(CommUserRank),
	SYM(CommCount),
	SYM(GroupStart),
	SYM(GroupEnd),
	SYM(AllReduce),
	SYM(Broadcast),
	SYM(Reduce),
	SYM(AllGather),
	SYM(ReduceScatter),
	SYM(Send),
	SYM(Recv),
	// ncclGetLastError arrived in 2.13, ncclAlltoAll in 2.28, ncclMemAlloc
	// and ncclMemFree in 2.19.
	OPTIONAL(GetLastError),
	OPTIONAL(AlltoAll),
	OPTIONAL(MemAlloc),
	OPTIONAL(MemFree),
	OPTIONAL(CommSplit),
};

const char *gdr_nccl_bind(gdr_nccl *l, void *handle) {
	l->h = handle;
	const char *missing = gdr_bind(handle, l, nccl_syms, sizeof nccl_syms / sizeof nccl_syms[0]);
	if (!l->MemAlloc || !l->MemFree) l->MemAlloc = 0, l->MemFree = 0;
	return missing;
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

int gdr_nccl_init_rank(gdr_nccl *n, gdr_cudart *c, int dev, gdr_ncclComm *comm, int nranks, const gdr_ncclUniqueId *id, int rank) {
	int e = c->SetDevice(dev);
	if (e) return e;
	e = n->CommInitRank(comm, nranks, *id, rank);
	return e ? 1000 + e : 0;
}

int gdr_nccl_init_ranks(gdr_nccl *n, gdr_cudart *c, int ndev, const int *devs, gdr_ncclComm *comms, int nranks, const gdr_ncclUniqueId *id, int first) {
	for (int i = 0; i < ndev; i++) comms[i] = NULL;
	int e = n->GroupStart();
	if (e) return 1000 + e;
	int failed = 0;
	for (int i = 0; i < ndev && !failed; i++) {
		if ((e = c->SetDevice(devs[i]))) failed = e;
		else if ((e = n->CommInitRank(&comms[i], nranks, *id, first + i))) failed = 1000 + e;
	}
	// The group is ended even after a failure: NCCL would otherwise keep
	// the thread inside it.
	int g = n->GroupEnd();
	if (failed) return failed;
	return g ? 1000 + g : 0;
}

int gdr_nccl_split(gdr_nccl *n, gdr_cudart *c, int dev, gdr_ncclComm parent, int color, int key, gdr_ncclComm *comm, int *rank, int *size) {
	int e = c->SetDevice(dev);
	if (e) return e;
	*comm = NULL;
	e = n->CommSplit(parent, color, key, comm, NULL);
	if (e) return 1000 + e;
	if (!*comm) return 0;
	if ((e = n->CommUserRank(*comm, rank)) || (e = n->CommCount(*comm, size))) return 1000 + e;
	return 0;
}

// comm is rank r's communicator, NULL once it was aborted.
static gdr_ncclComm comm(gdr_rank *r) { return __atomic_load_n(&r->comm, __ATOMIC_ACQUIRE); }

int gdr_nccl_abort_all(gdr_nccl *n, gdr_comms *cs) {
	int first = 0;
	for (int i = 0; i < cs->n; i++) {
		gdr_ncclComm c = __atomic_exchange_n(&cs->ranks[i].comm, NULL, __ATOMIC_ACQ_REL);
		if (!c) continue;
		int e = n->CommAbort(c);
		if (e && !first) first = 1000 + e;
	}
	return first;
}

// aborted_now is the abort the flag asks for, done on the calling thread
// (the one that polls the communicators).
static int aborted_now(gdr_nccl *n, gdr_comms *cs) {
	int e = gdr_nccl_abort_all(n, cs);
	if (e && !cs->abort_result) cs->abort_result = e;
	__atomic_store_n(&cs->aborted, 1, __ATOMIC_RELEASE);
	return GDR_ABORTED;
}

static int one(gdr_nccl *n, const gdr_op *op, gdr_rank *r, size_t shift) {
	char *recv = r->recv + shift;
	char *send = (op->inplace ? r->recv : r->send) + shift;
	gdr_ncclComm c = comm(r);
	if (!c) return GDR_ABORTED;
	if (op->inplace) {
		send += op->send_inplace_off * (size_t)r->rank;
		recv += op->recv_inplace_off * (size_t)r->rank;
	}
	switch (op->coll) {
	case GDR_ALL_REDUCE:
		return n->AllReduce(send, recv, op->count, op->dtype, op->redop, c, r->stream);
	case GDR_ALL_GATHER:
		return n->AllGather(send, recv, op->count, op->dtype, c, r->stream);
	case GDR_REDUCE_SCATTER:
		return n->ReduceScatter(send, recv, op->count, op->dtype, op->redop, c, r->stream);
	case GDR_BROADCAST:
		return n->Broadcast(send, recv, op->count, op->dtype, op->root, c, r->stream);
	case GDR_REDUCE:
		return n->Reduce(send, recv, op->count, op->dtype, op->redop, op->root, c, r->stream);
	case GDR_ALLTOALL: {
		if (n->AlltoAll) return n->AlltoAll(send, recv, op->count, op->dtype, c, r->stream);
		size_t chunk = op->count * op->elt;
		int e = n->GroupStart();
		for (int p = 0; !e && p < op->nranks; p++) {
			e = n->Send(send + p * chunk, op->count, op->dtype, p, c, r->stream);
			if (!e) e = n->Recv(recv + p * chunk, op->count, op->dtype, p, c, r->stream);
		}
		int g = n->GroupEnd();
		return e ? e : g;
	}
	case GDR_SENDRECV: {
		int to = (r->rank + 1) % op->nranks;
		int from = (r->rank - 1 + op->nranks) % op->nranks;
		int e = n->GroupStart();
		if (!e) e = n->Send(send, op->count, op->dtype, to, c, r->stream);
		if (!e) e = n->Recv(recv, op->count, op->dtype, from, c, r->stream);
		int g = n->GroupEnd();
		return e ? e : g;
	}
	}
	return 4; // ncclInvalidArgument
}

int gdr_nccl_enqueue(gdr_nccl *n, const gdr_op *op, gdr_comms *cs, int first, int iters, int *cancel) {
	// Successive iterations use different parts of the buffers, as
	// nccl-tests does, so small operations do not run from cache.
	size_t steps = op->total_bytes ? op->max_bytes / op->total_bytes : 1;
	if (steps == 0) steps = 1;
	int nlocal = cs->n;
	// No cudaSetDevice per launch: NCCL takes the device from the
	// communicator (nccl-tests does not set it either), and the call costs
	// a fraction of a microsecond that small operations would carry.
	for (int it = first; it < first + iters; it++) {
		if (gdr_flag(&cs->abort)) return aborted_now(n, cs);
		size_t shift = op->total_bytes * ((size_t)it % steps);
		int e = 0;
		if (nlocal > 1 && (e = n->GroupStart())) return 1000 + e;
		for (int i = 0; i < nlocal; i++) {
			if ((e = one(n, op, &cs->ranks[i], shift))) {
				if (nlocal > 1) n->GroupEnd();
				return e == GDR_ABORTED ? e : 1000 + e;
			}
		}
		if (nlocal > 1 && (e = n->GroupEnd())) return 1000 + e;
		if (gdr_flag(cancel)) return -2;
	}
	return 0;
}

// async_error is gdr_stream_wait's poll: the abort flag first (then this
// thread aborts every communicator), else a communicator's asynchronous
// error.
typedef struct {
	gdr_nccl *n;
	gdr_comms *cs;
	gdr_rank *r;
} async_arg;

static int async_error(void *p) {
	async_arg *a = p;
	if (gdr_flag(&a->cs->abort)) return aborted_now(a->n, a->cs);
	gdr_ncclComm c = comm(a->r);
	if (!c) return GDR_ABORTED;
	gdr_ncclResult ar = 0;
	int e = a->n->CommGetAsyncError(c, &ar);
	if (e) return 1000 + e;
	if (ar != GDR_ncclSuccess && ar != GDR_ncclInProgress) return 1000 + ar;
	return 0;
}

int gdr_nccl_wait(gdr_nccl *n, gdr_cudart *c, gdr_comms *cs, double deadline, int *cancel, int *bad) {
	for (int i = 0; i < cs->n; i++) {
		*bad = i;
		async_arg a = {n, cs, &cs->ranks[i]};
		int e = gdr_stream_wait(c, cs->ranks[i].dev, cs->ranks[i].stream, deadline, cancel, async_error, &a);
		if (e) return e;
	}
	*bad = -1;
	return 0;
}

int gdr_nccl_timed(gdr_nccl *n, gdr_cudart *c, const gdr_op *op, gdr_comms *cs, int iters,
                   double deadline, int *cancel, double *sec, int *bad) {
	*bad = -1;
	double t0 = gdr_now();
	int e = gdr_nccl_enqueue(n, op, cs, 0, iters, cancel);
	if (e) return e;
	e = gdr_nccl_wait(n, c, cs, deadline, cancel, bad);
	*sec = gdr_now() - t0;
	return e;
}
