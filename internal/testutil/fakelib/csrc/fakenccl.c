// A fake NCCL for tests on machines without a GPU: communicators of one
// process (ncclCommInitAll) whose collectives really compute their result
// on "device memory" that is host memory (see fakecudart.c), at the end of
// the group that posts them. Steered by environment variables:
//   FAKENCCL_VERSION   version code (default 22803 = 2.28.3; 21805 built with FAKENCCL_OLD)
//   FAKENCCL_CORRUPT   1: after every collective, corrupt rank 0's first output element
//   FAKENCCL_ASYNCERR  an ncclResult the communicators report asynchronously
//   FAKECUDA_OOM       1: ncclMemAlloc fails as NCCL does when CUDA is out of memory
// Communicators of several processes (ncclGetUniqueId, ncclCommInitRank)
// exchange their data through files in a directory the unique id names
// (under FAKENCCL_EXCHANGE_DIR, default /tmp), one file per rank and
// collective, so every rank computes the real result:
//   FAKENCCL_PEER_TIMEOUT_MS  how long a rank waits for its peers (default
//                             10000), then fails with ncclRemoteError
//   FAKENCCL_DIE_AT           "RANK:N": that rank kills itself (SIGKILL) at
//                             its N-th collective (0 = in ncclCommInitRank)
// A process may hold several ranks of one such communicator (ncclCommInitRank
// of each inside ncclGroupStart/End, as nccl-tests' -g under MPI does): the
// join is waited for at the group's end, and a group's collectives write
// every local rank's file before any rank reads its peers'.
// With NCCL_DEBUG=INFO and NCCL_DEBUG_FILE (%h: host, NCCL_HOSTID where
// set; %p: pid), ncclCommInitRank writes a few of NCCL's INFO lines: the
// version, the network (Socket), the comm and a ring over NET/Socket.
// It also enforces the rule the real one leaves to luck: a communicator is
// aborted by the thread that polls it (ncclCommGetAsyncError), if any, and
// never used after its abort; a breach is an ncclInvalidUsage whose
// ncclGetLastError says so.
// Built with -DFAKENCCL_OLD it is an NCCL 2.18: no ncclAlltoAll (the shim
// falls back to send/recv) and no ncclMemAlloc (buffers come from cudaMalloc).
#define _GNU_SOURCE
#include <stdio.h>
#include <signal.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <math.h>
#include <unistd.h>
#include <sys/syscall.h>

static int envint(const char *name, int def) {
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

#ifdef FAKENCCL_OLD
#define FAKE_VERSION 21805
#else
#define FAKE_VERSION 22803
#endif
int ncclGetVersion(int *v) { *v = envint("FAKENCCL_VERSION", FAKE_VERSION); return 0; }

const char *ncclGetErrorString(int r) {
	switch (r) {
	case 0: return "no error";
	case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case 2: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case 3: return "internal error - please report this issue to the NCCL developers";
	case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case 6: return "remote process exited or there was a network error";
	case 7: return "NCCL operation in progress";
	}
	return "unknown result code";
}

typedef struct fcomm {
	int nranks, rank, dev;
	int aborted; // atomic
	long poller; // atomic: the thread that last polled the asynchronous error
	struct fcomm **clique;
	// Multi-process communicators (ncclCommInitRank): clique is NULL,
	// dir is the exchange directory, seq the next collective's number.
	char dir[128];
	long seq;
	int splits; // ncclCommSplit calls so far
} fcomm;

static const char *last = "";
const char *ncclGetLastError(void *comm) { (void)comm; return last; }

static long tid(void) { return (long)syscall(SYS_gettid); }

int ncclCommInitAll(fcomm **comms, int n, const int *devs) {
	if (n < 1) return 4;
	fcomm **clique = calloc(n, sizeof(fcomm *));
	for (int i = 0; i < n; i++) {
		fcomm *c = calloc(1, sizeof *c);
		c->nranks = n;
		c->rank = i;
		c->dev = devs ? devs[i] : i;
		c->clique = clique;
		clique[i] = c;
		comms[i] = c;
	}
	return 0;
}

typedef struct { char internal[128]; } fuid;

// KEEP is how many collectives a rank's exchange files outlive (more than
// the ranks of any communicator, 256).
#define KEEP 260

static long now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static char lastbuf[512];

int ncclGetUniqueId(fuid *id) {
	const char *base = getenv("FAKENCCL_EXCHANGE_DIR");
	if (!base || !*base) base = "/tmp";
	memset(id, 0, sizeof *id);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(id->internal, sizeof id->internal, "%s/fakenccl-%d-%ld", base, (int)getpid(), (long)ts.tv_nsec);
	if (strlen(id->internal) >= 100) { last = "FAKENCCL_EXCHANGE_DIR is too long"; return 4; }
	if (mkdir(id->internal, 0700)) { last = "ncclGetUniqueId: cannot make the exchange directory"; return 2; }
	return 0;
}

static void die_at(fcomm *c, long n) {
	const char *v = getenv("FAKENCCL_DIE_AT");
	int r;
	long at;
	if (v && sscanf(v, "%d:%ld", &r, &at) == 2 && r == c->rank && at == n) kill(getpid(), SIGKILL);
}

// exch_path names rank's file of collective seq (peer < 0) or its send to
// peer.
static void exch_path(char *buf, size_t n, fcomm *c, long seq, int rank, int peer) {
	if (peer < 0) snprintf(buf, n, "%s/c%ld.r%d", c->dir, seq, rank);
	else snprintf(buf, n, "%s/c%ld.r%d.to%d", c->dir, seq, rank, peer);
}

// put_file writes bytes atomically (a temporary name, then rename).
static int put_file(const char *path, const void *p, size_t n) {
	char tmp[300];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "wb");
	if (!f) return 2;
	if (n && fwrite(p, 1, n, f) != n) { fclose(f); return 2; }
	if (fclose(f)) return 2;
	return rename(tmp, path) ? 2 : 0;
}

// get_file waits for path (until the peer timeout), then reads it whole.
static int get_file(fcomm *c, const char *path, int peer, char **out, size_t *n) {
	long until = now_ms() + envint("FAKENCCL_PEER_TIMEOUT_MS", 10000);
	for (;;) {
		FILE *f = fopen(path, "rb");
		if (f) {
			fseek(f, 0, SEEK_END);
			long sz = ftell(f);
			fseek(f, 0, SEEK_SET);
			*out = malloc(sz ? sz : 1);
			*n = fread(*out, 1, sz, f);
			fclose(f);
			return 0;
		}
		if (now_ms() > until) {
			snprintf(lastbuf, sizeof lastbuf, "rank %d of %d: peer rank %d did not arrive within %d ms (%s)", c->rank, c->nranks, peer,
			         envint("FAKENCCL_PEER_TIMEOUT_MS", 10000), path);
			last = lastbuf;
			return 6; // ncclRemoteError
		}
		usleep(500);
	}
}

// debug_log writes the INFO lines of c's initialisation where NCCL would.
static void debug_log(fcomm *c) {
	const char *dbg = getenv("NCCL_DEBUG"), *file = getenv("NCCL_DEBUG_FILE");
	if (!dbg || strcmp(dbg, "INFO") || !file || !*file) return;
	char host[64] = "fakehost";
	const char *hid = getenv("NCCL_HOSTID");
	if (hid && *hid) snprintf(host, sizeof host, "%s", hid);
	else gethostname(host, sizeof host);
	char path[512];
	size_t o = 0;
	for (const char *f = file; *f && o < sizeof path - 32; f++) {
		if (f[0] == '%' && f[1] == 'h') { o += snprintf(path + o, sizeof path - o, "%s", host); f++; }
		else if (f[0] == '%' && f[1] == 'p') { o += snprintf(path + o, sizeof path - o, "%d", (int)getpid()); f++; }
		else path[o++] = *f;
	}
	path[o] = 0;
	FILE *out = fopen(path, "a");
	if (!out) return;
	int pid = (int)getpid(), v = envint("FAKENCCL_VERSION", FAKE_VERSION);
	const char *pre = host;
	fprintf(out, "%s:%d:%d [0] NCCL INFO NCCL version %d.%d.%d+cuda13.0\n", pre, pid, pid, v / 10000, (v % 10000) / 100, v % 100);
	fprintf(out, "%s:%d:%d [0] NCCL INFO NET/IB : No device found.\n", pre, pid, pid);
	fprintf(out, "%s:%d:%d [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n", pre, pid, pid);
	fprintf(out, "%s:%d:%d [0] NCCL INFO Using network Socket\n", pre, pid, pid);
	fprintf(out, "%s:%d:%d [0] NCCL INFO comm %p rank %d nranks %d cudaDev 0 busId 18000 commId 0x%lx - Init START\n", pre, pid, pid, (void *)c, c->rank, c->nranks, (unsigned long)strlen(c->dir) * 7919UL);
	int next = (c->rank + 1) % c->nranks, prev = (c->rank + c->nranks - 1) % c->nranks;
	for (int ch = 0; ch < 2 && c->nranks > 1; ch++) {
		fprintf(out, "%s:%d:%d [0] NCCL INFO Channel %02d/0 : %d[18000] -> %d[18000] [send] via NET/Socket/0\n", pre, pid, pid, ch, c->rank, next);
		fprintf(out, "%s:%d:%d [0] NCCL INFO Channel %02d/0 : %d[18000] -> %d[18000] [receive] via NET/Socket/0\n", pre, pid, pid, ch, prev, c->rank);
	}
	fclose(out);
}

// await_join waits until every rank of c's communicator has joined.
static int await_join(fcomm *c) {
	char path[300];
	for (int r = 0; r < c->nranks; r++) {
		char *b;
		size_t n;
		snprintf(path, sizeof path, "%s/joined.r%d", c->dir, r);
		int e = get_file(c, path, r, &b, &n);
		if (e) return e;
		free(b);
	}
	debug_log(c);
	return 0;
}

// The group in progress: its depth, and the communicators initialised in
// it, whose join ncclGroupEnd waits for.
static int depth = 0;
#define MAXJOIN 64
static fcomm *joining[MAXJOIN];
static int njoin = 0;

int ncclCommInitRank(fcomm **comm, int nranks, fuid id, int rank) {
	if (nranks < 1 || rank < 0 || rank >= nranks) return 4;
	if (strncmp(id.internal, "/", 1) != 0) { last = "ncclCommInitRank: not a unique id of this fake"; return 4; }
	if (depth && njoin >= MAXJOIN) { last = "ncclCommInitRank: too many communicators in one group"; return 4; }
	fcomm *c = calloc(1, sizeof *c);
	c->nranks = nranks;
	c->rank = rank;
	memcpy(c->dir, id.internal, sizeof c->dir);
	c->dir[sizeof c->dir - 1] = 0;
	die_at(c, 0);
	char path[300];
	snprintf(path, sizeof path, "%s/joined.r%d", c->dir, rank);
	if (put_file(path, "", 0)) { last = "ncclCommInitRank: cannot write to the exchange directory"; free(c); return 2; }
	if (depth) {
		// In a group, like the real one: the communicator is returned now
		// and the join completes at ncclGroupEnd.
		joining[njoin++] = c;
		*comm = c;
		return 0;
	}
	// Like the real one, return once every rank has joined.
	int e = await_join(c);
	if (e) { free(c); return e; }
	*comm = c;
	return 0;
}

// cleanup marks c's rank done; the last rank done removes the exchange
// directory (a rank's last files may still be read by a slower peer until
// that peer is done too). A rank that died leaves the directory behind.
static void cleanup(fcomm *c) {
	if (c->clique || !c->dir[0]) return;
	char path[512];
	snprintf(path, sizeof path, "%s/done.r%d", c->dir, c->rank);
	if (put_file(path, "", 0)) return;
	for (int r = 0; r < c->nranks; r++) {
		snprintf(path, sizeof path, "%s/done.r%d", c->dir, r);
		if (access(path, F_OK)) return;
	}
	DIR *d = opendir(c->dir);
	if (!d) return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.') continue;
		snprintf(path, sizeof path, "%s/%s", c->dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(c->dir);
}

int ncclCommCount(fcomm *c, int *n) { *n = c->nranks; return 0; }

// ncclCommSplit of a multi-process communicator: every rank writes its
// color and key, reads everyone's, and joins the communicator of its
// color (exchanging in a subdirectory of the parent's).
int ncclCommSplit(fcomm *c, int color, int key, fcomm **out, void *config) {
	(void)config;
	*out = NULL;
	if (c->clique || !c->dir[0]) { last = "ncclCommSplit: the fake splits only communicators of several processes"; return 5; }
	int n = c->splits++;
	char path[300];
	snprintf(path, sizeof path, "%s/split%d.r%d", c->dir, n, c->rank);
	char mine[64];
	snprintf(mine, sizeof mine, "%d %d", color, key);
	if (put_file(path, mine, strlen(mine))) { last = "cannot write to the exchange directory"; return 2; }
	int size = 0, rank = 0;
	for (int r = 0; r < c->nranks; r++) {
		char *b;
		size_t len;
		snprintf(path, sizeof path, "%s/split%d.r%d", c->dir, n, r);
		int e = get_file(c, path, r, &b, &len);
		if (e) return e;
		int col = -1, k = 0;
		char tmp[64];
		snprintf(tmp, sizeof tmp, "%.*s", (int)len, b);
		free(b);
		if (sscanf(tmp, "%d %d", &col, &k) != 2) { last = "ncclCommSplit: a peer's color is unreadable"; return 3; }
		if (color < 0 || col != color) continue;
		size++;
		if (k < key || (k == key && r < c->rank)) rank++;
	}
	if (color < 0) return 0;
	fcomm *s = calloc(1, sizeof *s);
	s->nranks = size;
	s->rank = rank;
	s->dev = c->dev;
	char sub[300];
	snprintf(sub, sizeof sub, "%s/s%dc%d", c->dir, n, color);
	if (strlen(sub) >= sizeof s->dir) { free(s); last = "ncclCommSplit: the exchange path is too long"; return 4; }
	memcpy(s->dir, sub, strlen(sub) + 1);
	if (mkdir(s->dir, 0700) && errno != EEXIST) { free(s); last = "ncclCommSplit: cannot make the exchange directory"; return 2; }
	*out = s;
	return 0;
}

int ncclCommDestroy(fcomm *c) { if (c) cleanup(c); return 0; }
int ncclCommAbort(fcomm *c) {
	if (!c) return 0;
	if (__atomic_exchange_n(&c->aborted, 1, __ATOMIC_SEQ_CST)) { last = "ncclCommAbort: communicator aborted twice"; return 5; }
	long p = __atomic_load_n(&c->poller, __ATOMIC_SEQ_CST);
	if (p && p != tid()) { last = "ncclCommAbort: called from another thread than the one polling the communicator"; return 5; }
	cleanup(c);
	return 0;
}

int ncclCommGetAsyncError(fcomm *c, int *r) {
	__atomic_store_n(&c->poller, tid(), __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->aborted, __ATOMIC_SEQ_CST)) { last = "ncclCommGetAsyncError: communicator used after ncclCommAbort"; return 5; }
	*r = envint("FAKENCCL_ASYNCERR", 0);
	return 0;
}
int ncclCommUserRank(fcomm *c, int *r) { *r = c->rank; return 0; }

// Element access by NCCL data type, through double (exact for the small
// integers the benchmark writes) or int64 for the integer types.
static size_t eltsize(int t) {
	switch (t) {
	case 0: case 1: return 1;
	case 2: case 3: return 4;
	case 4: case 5: return 8;
	case 6: case 9: return 2;
	case 7: return 4;
	case 8: return 8;
	}
	return 0;
}

static float half2f(uint16_t h) {
	uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
	float v;
	if (e == 0) v = ldexpf((float)m, -24);
	else if (e == 31) v = m ? NAN : INFINITY;
	else v = ldexpf((float)(m | 1024), (int)e - 25);
	return s ? -v : v;
}

static uint16_t f2half(float f) {
	// Exact for the integers and halves the tests use; rounds otherwise.
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t s = (x >> 16) & 0x8000;
	int e = (int)((x >> 23) & 255) - 127 + 15;
	uint32_t m = x & 0x7fffff;
	if (((x >> 23) & 255) == 0) return (uint16_t)s;
	if (e >= 31) return (uint16_t)(s | 0x7c00);
	if (e <= 0) return (uint16_t)s;
	return (uint16_t)(s | (e << 10) | ((m + 0x1000) >> 13));
}

static double get(const void *p, size_t i, int t) {
	switch (t) {
	case 0: return ((const int8_t *)p)[i];
	case 1: return ((const uint8_t *)p)[i];
	case 2: return ((const int32_t *)p)[i];
	case 3: return ((const uint32_t *)p)[i];
	case 4: return (double)((const int64_t *)p)[i];
	case 5: return (double)((const uint64_t *)p)[i];
	case 6: return half2f(((const uint16_t *)p)[i]);
	case 7: return ((const float *)p)[i];
	case 8: return ((const double *)p)[i];
	case 9: { uint32_t x = (uint32_t)((const uint16_t *)p)[i] << 16; float f; memcpy(&f, &x, 4); return f; }
	}
	return 0;
}

static void put(void *p, size_t i, int t, double v) {
	switch (t) {
	case 0: ((int8_t *)p)[i] = (int8_t)v; break;
	case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case 2: ((int32_t *)p)[i] = (int32_t)v; break;
	case 3: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case 4: ((int64_t *)p)[i] = (int64_t)v; break;
	case 5: ((uint64_t *)p)[i] = (uint64_t)v; break;
	case 6: ((uint16_t *)p)[i] = f2half((float)v); break;
	case 7: ((float *)p)[i] = (float)v; break;
	case 8: ((double *)p)[i] = v; break;
	case 9: { float f = (float)v; uint32_t x; memcpy(&x, &f, 4); ((uint16_t *)p)[i] = (uint16_t)((x + 0x8000) >> 16); break; }
	}
}

static double reduce(double a, double b, int op) {
	switch (op) {
	case 0: case 4: return a + b;
	case 1: return a * b;
	case 2: return a > b ? a : b;
	case 3: return a < b ? a : b;
	}
	return a;
}

enum { C_ALLREDUCE, C_BCAST, C_REDUCE, C_ALLGATHER, C_RSCATTER, C_SEND, C_RECV };

typedef struct {
	int coll, dt, op, root, peer, done;
	fcomm *comm;
	const void *s;
	void *r;
	size_t count;
	// A multi-process collective's number on its communicator, once its
	// input is written for the peers (posted).
	long seq;
	int posted;
} pend;

#define MAXP 8192
static pend P[MAXP];
static int np = 0;

static void corrupt(void *buf, int dt) {
	if (buf && envint("FAKENCCL_CORRUPT", 0)) put(buf, 0, dt, get(buf, 0, dt) + 3);
}

static int compute(pend *p, pend **by, int n);

static size_t send_bytes(pend *p) {
	size_t b = p->count * eltsize(p->dt);
	return p->coll == C_RSCATTER ? b * p->comm->nranks : b;
}

// remote_post writes p's input for its peers: the collective's next
// number on its communicator.
static int remote_post(pend *p) {
	fcomm *c = p->comm;
	p->seq = c->seq++;
	p->posted = 1;
	die_at(c, p->seq + 1);
	char path[300];
	exch_path(path, sizeof path, c, p->seq, c->rank, -1);
	if (put_file(path, p->s, send_bytes(p))) { last = "cannot write to the exchange directory"; return 2; }
	return 0;
}

// remote_inputs makes by[] of a multi-process collective posted: this
// rank's entry is p, every other rank's a copy of its input read from its
// file (a rank of this process too: every local rank of the group posted
// before any reads).
static int remote_inputs(pend *p, pend *by, pend **pby, char **bufs) {
	fcomm *c = p->comm;
	long seq = p->seq;
	char path[300];
	for (int r = 0; r < c->nranks; r++) {
		if (r == c->rank) { pby[r] = p; continue; }
		size_t n;
		exch_path(path, sizeof path, c, seq, r, -1);
		int e = get_file(c, path, r, &bufs[r], &n);
		if (e) return e;
		if (n != send_bytes(p)) { last = "peers posted collectives of different sizes"; return 5; }
		by[r] = *p;
		by[r].s = bufs[r];
		by[r].r = NULL;
		pby[r] = &by[r];
	}
	// Ranks drift apart by at most one collective per rank (a ring of
	// sendrecv): files KEEP collectives old are read by all.
	if (seq >= KEEP) {
		exch_path(path, sizeof path, c, seq - KEEP, c->rank, -1);
		unlink(path);
	}
	return 0;
}

// run executes the collective p and the matching entries of its clique
// (or, for a multi-process communicator, of its peers' files).
static int run(int k) {
	pend *p = &P[k];
	int n = p->comm->nranks;
	pend *by[256] = {0};
	if (n > 256) return 4;
	if (!p->comm->clique) {
		pend copies[256];
		char *bufs[256] = {0};
		int e = p->posted ? 0 : remote_post(p);
		if (!e) e = remote_inputs(p, copies, by, bufs);
		if (!e) e = compute(p, by, n);
		// compute corrupts rank 0's output; on another rank, its own.
		if (!e && p->comm->rank != 0) corrupt(p->r, p->dt);
		for (int r = 0; r < n; r++) free(bufs[r]);
		p->done = 1;
		return e;
	}
	for (int j = k; j < np; j++) {
		if (!P[j].done && P[j].coll == p->coll && P[j].comm->clique == p->comm->clique && !by[P[j].comm->rank]) by[P[j].comm->rank] = &P[j];
	}
	for (int r = 0; r < n; r++) {
		if (!by[r]) { last = "collective not posted by every rank of the communicator"; return 5; }
	}
	int e = compute(p, by, n);
	for (int r = 0; r < n; r++) by[r]->done = 1;
	return e;
}

// OUT(r) guards a write of rank r's output: none for a peer's copy (its
// output buffer is in another process).
#define OUT(r) if (by[r]->r)

// compute fills the outputs of by[] (by[r] is rank r's entry).
static int compute(pend *p, pend **by, int n) {
	size_t c = p->count;
	size_t es = eltsize(p->dt);
	switch (p->coll) {
	case C_ALLREDUCE:
	case C_REDUCE: {
		double *acc = malloc(c * sizeof(double));
		for (size_t i = 0; i < c; i++) {
			double v = get(by[0]->s, i, p->dt);
			for (int r = 1; r < n; r++) v = reduce(v, get(by[r]->s, i, p->dt), p->op);
			if (p->op == 4) v /= n;
			acc[i] = v;
		}
		for (int r = 0; r < n; r++) {
			if (p->coll == C_REDUCE && r != p->root) continue;
			OUT(r) for (size_t i = 0; i < c; i++) put(by[r]->r, i, p->dt, acc[i]);
		}
		free(acc);
		corrupt(by[p->coll == C_REDUCE ? p->root : 0]->r, p->dt);
		break;
	}
	case C_BCAST: {
		char *src = malloc(c * es);
		memcpy(src, by[p->root]->s, c * es);
		for (int r = 0; r < n; r++) OUT(r) memcpy(by[r]->r, src, c * es);
		free(src);
		corrupt(by[0]->r, p->dt);
		break;
	}
	case C_ALLGATHER: {
		char *all = malloc(c * es * n);
		for (int r = 0; r < n; r++) memcpy(all + r * c * es, by[r]->s, c * es);
		for (int r = 0; r < n; r++) OUT(r) memcpy(by[r]->r, all, c * es * n);
		free(all);
		corrupt(by[0]->r, p->dt);
		break;
	}
	case C_RSCATTER: {
		double *acc = malloc(c * n * sizeof(double));
		for (size_t i = 0; i < c * n; i++) {
			double v = get(by[0]->s, i, p->dt);
			for (int r = 1; r < n; r++) v = reduce(v, get(by[r]->s, i, p->dt), p->op);
			if (p->op == 4) v /= n;
			acc[i] = v;
		}
		for (int r = 0; r < n; r++)
			OUT(r) for (size_t i = 0; i < c; i++) put(by[r]->r, i, p->dt, acc[r * c + i]);
		free(acc);
		corrupt(by[0]->r, p->dt);
		break;
	}
	}
	return 0;
}

// remote_p2p runs the sends and receives of a group on multi-process
// communicators (one or several of this process's ranks): each
// communicator's next number, then every send a file, then every receive
// waits for its peer's.
static int remote_p2p(void) {
	fcomm *cs[MAXJOIN];
	long seqs[MAXJOIN];
	int nc = 0;
	for (int i = 0; i < np; i++) {
		if ((P[i].coll != C_SEND && P[i].coll != C_RECV) || P[i].comm->clique) continue;
		int k = 0;
		while (k < nc && cs[k] != P[i].comm) k++;
		if (k == nc) {
			if (nc == MAXJOIN) { last = "too many communicators in one group"; return 4; }
			cs[nc] = P[i].comm;
			seqs[nc] = P[i].comm->seq++;
			die_at(cs[nc], seqs[nc] + 1);
			nc++;
		}
		P[i].seq = seqs[k];
	}
	char path[300];
	for (int i = 0; i < np; i++) {
		if (P[i].coll != C_SEND || P[i].done || P[i].comm->clique) continue;
		exch_path(path, sizeof path, P[i].comm, P[i].seq, P[i].comm->rank, P[i].peer);
		if (put_file(path, P[i].s, P[i].count * eltsize(P[i].dt))) { last = "cannot write to the exchange directory"; return 2; }
		P[i].done = 1;
	}
	for (int i = 0; i < np; i++) {
		if (P[i].coll != C_RECV || P[i].done || P[i].comm->clique) continue;
		fcomm *c = P[i].comm;
		exch_path(path, sizeof path, c, P[i].seq, P[i].peer, c->rank);
		char *b;
		size_t n;
		int e = get_file(c, path, P[i].peer, &b, &n);
		if (e) return e;
		if (n != P[i].count * eltsize(P[i].dt)) { free(b); last = "send and receive of different sizes"; return 5; }
		memcpy(P[i].r, b, n);
		free(b);
		P[i].done = 1;
	}
	for (int k = 0; k < nc; k++) {
		if (seqs[k] < KEEP) continue;
		for (int p = 0; p < cs[k]->nranks; p++) {
			exch_path(path, sizeof path, cs[k], seqs[k] - KEEP, cs[k]->rank, p);
			unlink(path);
		}
	}
	return 0;
}

static int flush(void) {
	int e = 0;
	for (int i = 0; i < np; i++) {
		if (!P[i].comm->clique) { e = remote_p2p(); break; }
	}
	// Every multi-process collective of the group posts its input before
	// any waits for its peers': a peer may be another rank of this process.
	for (int i = 0; i < np && !e; i++) {
		if (!P[i].done && !P[i].comm->clique && P[i].coll != C_SEND && P[i].coll != C_RECV) e = remote_post(&P[i]);
	}
	// Point-to-point: every send meets the receive posted by its peer.
	for (int i = 0; i < np && !e; i++) {
		pend *s = &P[i];
		if (s->done || s->coll != C_SEND) continue;
		fcomm *dst = s->comm->clique[s->peer];
		int found = 0;
		for (int j = 0; j < np; j++) {
			pend *r = &P[j];
			if (!r->done && r->coll == C_RECV && r->comm == dst && r->peer == s->comm->rank && r->count == s->count) {
				memmove(r->r, s->s, s->count * eltsize(s->dt));
				r->done = s->done = 1;
				found = 1;
				break;
			}
		}
		if (!found) { last = "send without a matching receive"; e = 5; }
	}
	for (int i = 0; i < np && !e; i++) {
		if (P[i].done) continue;
		if (P[i].coll == C_RECV) { last = "receive without a matching send"; e = 5; break; }
		e = run(i);
	}
	np = 0;
	return e;
}

static int post(pend p) {
	if (__atomic_load_n(&p.comm->aborted, __ATOMIC_SEQ_CST)) { last = "communicator used after ncclCommAbort"; return 5; }
	if (np >= MAXP) return 2;
	P[np++] = p;
	return depth ? 0 : flush();
}

int ncclGroupStart(void) { depth++; return 0; }
int ncclGroupEnd(void) {
	if (depth == 0) return 5;
	if (--depth) return 0;
	int e = 0;
	for (int i = 0; i < njoin; i++) {
		int j = await_join(joining[i]);
		if (j && !e) e = j;
	}
	njoin = 0;
	int f = flush();
	return e ? e : f;
}

int ncclAllReduce(const void *s, void *r, size_t c, int dt, int op, fcomm *comm, void *st) {
	(void)st; return post((pend){C_ALLREDUCE, dt, op, 0, 0, 0, comm, s, r, c});
}
int ncclBroadcast(const void *s, void *r, size_t c, int dt, int root, fcomm *comm, void *st) {
	(void)st; return post((pend){C_BCAST, dt, 0, root, 0, 0, comm, s, r, c});
}
int ncclReduce(const void *s, void *r, size_t c, int dt, int op, int root, fcomm *comm, void *st) {
	(void)st; return post((pend){C_REDUCE, dt, op, root, 0, 0, comm, s, r, c});
}
int ncclAllGather(const void *s, void *r, size_t c, int dt, fcomm *comm, void *st) {
	(void)st; return post((pend){C_ALLGATHER, dt, 0, 0, 0, 0, comm, s, r, c});
}
int ncclReduceScatter(const void *s, void *r, size_t c, int dt, int op, fcomm *comm, void *st) {
	(void)st; return post((pend){C_RSCATTER, dt, op, 0, 0, 0, comm, s, r, c});
}
int ncclSend(const void *s, size_t c, int dt, int peer, fcomm *comm, void *st) {
	(void)st; return post((pend){C_SEND, dt, 0, 0, peer, 0, comm, s, NULL, c});
}
int ncclRecv(void *r, size_t c, int dt, int peer, fcomm *comm, void *st) {
	(void)st; return post((pend){C_RECV, dt, 0, 0, peer, 0, comm, NULL, r, c});
}

#ifndef FAKENCCL_OLD
// ncclAlltoAll (2.28+): a send to and a receive from every peer, in a group.
int ncclAlltoAll(const void *s, void *r, size_t c, int dt, fcomm *comm, void *st) {
	size_t chunk = c * eltsize(dt);
	int e = ncclGroupStart();
	for (int p = 0; !e && p < comm->nranks; p++) {
		e = ncclSend((const char *)s + p * chunk, c, dt, p, comm, st);
		if (!e) e = ncclRecv((char *)r + p * chunk, c, dt, p, comm, st);
	}
	int g = ncclGroupEnd();
	return e ? e : g;
}

// ncclMemAlloc (2.19+): "device memory" is host memory here too. Poisoned
// with a byte no pattern starts with, as fresh device memory is not zero.
int ncclMemAlloc(void **p, size_t n) {
	if (envint("FAKECUDA_OOM", 0)) { last = "Cuda failure 2 'out of memory'"; return 1; }
	*p = malloc(n ? n : 1);
	if (!*p) { last = "Cuda failure 2 'out of memory'"; return 1; }
	memset(*p, 0xa5, n);
	return 0;
}

int ncclMemFree(void *p) { free(p); return 0; }
#endif
