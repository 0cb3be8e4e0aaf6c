// Our own declarations of the NCCL entry points gdrcheck uses; libnccl.so.2
// is dlopen'ed at run time, so no nccl.h is needed to build.
#ifndef GDR_NCCL_SHIM_H
#define GDR_NCCL_SHIM_H
#include <stddef.h>
#include "../cuda/shim.h"

typedef int gdr_ncclResult;
typedef void *gdr_ncclComm;

// ncclUniqueId: NCCL_UNIQUE_ID_BYTES (128) opaque bytes, passed by value
// to ncclCommInitRank.
#define GDR_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[GDR_NCCL_UNIQUE_ID_BYTES];
} gdr_ncclUniqueId;

enum {
	GDR_ncclSuccess = 0,
	GDR_ncclInProgress = 7,
};

typedef struct gdr_nccl {
	void *h;
	gdr_ncclResult (*GetVersion)(int *);
	const char *(*GetErrorString)(gdr_ncclResult);
	const char *(*GetLastError)(gdr_ncclComm);
	gdr_ncclResult (*CommInitAll)(gdr_ncclComm *, int, const int *);
	gdr_ncclResult (*GetUniqueId)(gdr_ncclUniqueId *);
	gdr_ncclResult (*CommInitRank)(gdr_ncclComm *, int, gdr_ncclUniqueId, int);
	gdr_ncclResult (*CommDestroy)(gdr_ncclComm);
	gdr_ncclResult (*CommAbort)(gdr_ncclComm);
	gdr_ncclResult (*CommGetAsyncError)(gdr_ncclComm, gdr_ncclResult *);
	gdr_ncclResult (*CommUserRank)(gdr_ncclComm, int *);
	gdr_ncclResult (*CommCount)(gdr_ncclComm, int *);
	// ncclCommSplit arrived in NCCL 2.18 (the config argument is passed
	// NULL: the parent's); NULL before.
	gdr_ncclResult (*CommSplit)(gdr_ncclComm, int, int, gdr_ncclComm *, void *);
	gdr_ncclResult (*GroupStart)(void);
	gdr_ncclResult (*GroupEnd)(void);
	gdr_ncclResult (*AllReduce)(const void *, void *, size_t, int, int, gdr_ncclComm, gdr_stream);
	gdr_ncclResult (*Broadcast)(const void *, void *, size_t, int, int, gdr_ncclComm, gdr_stream);
	gdr_ncclResult (*Reduce)(const void *, void *, size_t, int, int, int, gdr_ncclComm, gdr_stream);
	gdr_ncclResult (*AllGather)(const void *, void *, size_t, int, gdr_ncclComm, gdr_stream);
	gdr_ncclResult (*ReduceScatter)(const void *, void *, size_t, int, int, gdr_ncclComm, gdr_stream);
	gdr_ncclResult (*Send)(const void *, size_t, int, int, gdr_ncclComm, gdr_stream);
	gdr_ncclResult (*Recv)(void *, size_t, int, int, gdr_ncclComm, gdr_stream);
	// ncclAlltoAll arrived in NCCL 2.28; NULL before (send/recv is used).
	gdr_ncclResult (*AlltoAll)(const void *, void *, size_t, int, gdr_ncclComm, gdr_stream);
	// ncclMemAlloc/ncclMemFree arrived in NCCL 2.19 (cuMem memory NCCL can
	// register); NULL before.
	gdr_ncclResult (*MemAlloc)(void **, size_t);
	gdr_ncclResult (*MemFree)(void *);
} gdr_nccl;

const char *gdr_nccl_bind(gdr_nccl *l, void *handle);

// Collectives. Go reads these numbers through cgo (nccl.CollNumber);
// TestCollNumbersMatchShim checks each name against gdrcheck's collectives.
enum {
	GDR_ALL_REDUCE = 0,
	GDR_ALL_GATHER = 1,
	GDR_REDUCE_SCATTER = 2,
	GDR_BROADCAST = 3,
	GDR_REDUCE = 4,
	GDR_ALLTOALL = 5,
	GDR_SENDRECV = 6,
};

// gdr_rank is one local GPU's part in a collective.
typedef struct {
	int dev;
	int rank;  // global rank
	// comm is read and cleared with __atomic builtins: whoever aborts
	// takes it (exchanges it for NULL), so no communicator is aborted twice
	// and none is used after its abort by the thread that aborted it.
	gdr_ncclComm comm;
	gdr_stream stream;
	char *send; // base of the send buffer
	char *recv; // base of the receive buffer
} gdr_rank;

// gdr_comms are the communicators of one process. abort is raised by Go
// (atomically) to ask the CUDA thread, which polls them, to abort them:
// the loops check it before each poll of a communicator and between
// launches, abort every communicator themselves and return GDR_ABORTED.
// aborted is set once they did; abort_result is the first failure of
// ncclCommAbort (1000 + the result), or 0.
typedef struct {
	int abort;
	int aborted;
	int abort_result;
	int n;
	gdr_rank *ranks;
} gdr_comms;

enum { GDR_ABORTED = -3 };

// gdr_nccl_abort_all aborts every communicator not aborted yet and
// returns the first failure (1000 + the result), or 0.
int gdr_nccl_abort_all(gdr_nccl *n, gdr_comms *cs);

// gdr_nccl_init_rank sets the device, then joins the communicator of
// nranks ranks as rank (ncclCommInitRank, which works on the current
// device), in one call. NCCL results come back as 1000 + the result, CUDA
// errors as they are.
int gdr_nccl_init_rank(gdr_nccl *n, gdr_cudart *c, int dev, gdr_ncclComm *comm, int nranks, const gdr_ncclUniqueId *id, int rank);

// gdr_nccl_init_ranks joins ndev local GPUs to a communicator of nranks
// ranks as ranks first..first+ndev-1 in one group (ncclGroupStart; per
// device: set it, then ncclCommInitRank; ncclGroupEnd), in one call: one
// process driving several GPUs of a multi-process job, as nccl-tests does
// with -g under MPI. comms[i] is device i's communicator (NULL where none
// was made; on an error the caller aborts those that were). NCCL results
// come back as 1000 + the result, CUDA errors as they are.
int gdr_nccl_init_ranks(gdr_nccl *n, gdr_cudart *c, int ndev, const int *devs, gdr_ncclComm *comms, int nranks, const gdr_ncclUniqueId *id, int first);

// gdr_nccl_split sets the device, then splits parent (ncclCommSplit with
// the parent's configuration): ranks of one color form a communicator,
// ordered by key. A rank of color GDR_NCCL_SPLIT_NOCOLOR gets none.
#define GDR_NCCL_SPLIT_NOCOLOR (-1)
int gdr_nccl_split(gdr_nccl *n, gdr_cudart *c, int dev, gdr_ncclComm parent, int color, int key, gdr_ncclComm *comm, int *rank, int *size);

// gdr_op describes the operation the loop enqueues (byte offsets as
// nccl-tests computes them).
typedef struct {
	int coll;
	size_t count;          // the collective's count argument
	int dtype;
	int redop;
	int root;
	int nranks;            // world size
	int inplace;
	size_t send_inplace_off; // bytes per rank
	size_t recv_inplace_off;
	size_t elt;             // element size
	size_t total_bytes;     // max(send, recv) bytes of one op
	size_t max_bytes;       // buffer size: successive iterations shift through it
} gdr_op;

// gdr_nccl_mem_alloc and gdr_nccl_mem_free set the device, then call
// ncclMemAlloc/ncclMemFree (which work on the current device), in one call.
// NCCL results come back as 1000 + the result, CUDA errors as they are.
int gdr_nccl_mem_alloc(gdr_nccl *n, gdr_cudart *c, int dev, void **p, size_t bytes);
int gdr_nccl_mem_free(gdr_nccl *n, gdr_cudart *c, int dev, void *p);

// gdr_nccl_enqueue launches iters operations on every local rank (in a
// group when there are several), iterations first..first+iters-1 (the
// iteration picks the buffer shift), watching the cancel flag (returns
// -2) and the abort flag (returns GDR_ABORTED) between them.
int gdr_nccl_enqueue(gdr_nccl *n, const gdr_op *op, gdr_comms *cs, int first, int iters, int *cancel);

// gdr_nccl_wait spins until every local stream is idle, checking each
// communicator's asynchronous error, the abort flag, the deadline and the
// cancel flag. Returns 0, a negative code (-1 timeout, -2 cancelled,
// GDR_ABORTED), or 1000+the NCCL error / the CUDA error as is; *bad is the
// index of the failing rank.
int gdr_nccl_wait(gdr_nccl *n, gdr_cudart *c, gdr_comms *cs, double deadline, int *cancel, int *bad);

// gdr_nccl_timed enqueues iters operations and waits for them, timing the
// whole with the host clock as nccl-tests does; *sec is the total.
int gdr_nccl_timed(gdr_nccl *n, gdr_cudart *c, const gdr_op *op, gdr_comms *cs, int iters,
                   double deadline, int *cancel, double *sec, int *bad);

#endif
