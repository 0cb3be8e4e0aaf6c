// A fake NCCL for tests on machines without a GPU.
//   FAKENCCL_VERSION   version code (default 22803 = 2.28.3)
#include <stdlib.h>

int ncclGetVersion(int *v) {
	const char *s = getenv("FAKENCCL_VERSION");
	*v = s && *s ? atoi(s) : 22803;
	return 0;
}

const char *ncclGetErrorString(int r) {
	switch (r) {
	case 0: return "no error";
	case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case 2: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case 3: return "internal error - please report this issue to the NCCL developers";
	case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case 6: return "remote process exited or there was a network error";
	}
	return "unknown result code";
}

const char *ncclGetLastError(void *comm) { return ""; }
