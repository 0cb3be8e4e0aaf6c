package ncclog

import (
	"strings"
	"testing"
)

// TestProbeWarnings: NCCL probing for libibverbs on a host without it
// prints a WARN and, on the same thread, the return code it passes up;
// then it falls back and goes on. Both are warnings, not errors; the same
// return code on another thread, or after the thread went on, is an
// error. The real sample is nccltests82-ibverbs-probe-warn-socket-
// broadcast-excerpt (the WARN only); no public log with the return-code
// chain after it was found, so these lines are written in the form issue
// 26 describes ("lib wrapper not initialized." then "gdr.cc:… -> 3").
func TestProbeWarnings(t *testing.T) {
	for _, c := range []struct {
		name        string
		log         string
		errs, warns int64
	}{
		{"probe and its chain", "h:1:2 [0] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.\n" +
			"h:1:2 [0] NCCL INFO transport/net_ib.cc:500 -> 3\nh:1:2 [0] NCCL INFO gdr.cc:91 -> 3\n" +
			"h:1:2 [0] NCCL INFO Using network Socket\n", 0, 3},
		{"another thread's return code is an error", "h:1:2 [0] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.\n" +
			"h:1:3 [0] NCCL INFO transport/net.cc:1302 -> 6\n", 1, 1},
		{"after the thread went on", "h:1:2 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n" +
			"h:1:2 [0] NCCL INFO Using network Socket\nh:1:2 [0] NCCL INFO proxy.cc:878 -> 6\n", 1, 1},
		{"a real WARN stays an error", "h:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer with error 4\n", 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _, err := Analyze("probe.log", strings.NewReader(c.log))
			if err != nil {
				t.Fatal(err)
			}
			if r.ErrorCount != c.errs || r.WarningCount != c.warns {
				t.Errorf("errors %d warnings %d, want %d and %d", r.ErrorCount, r.WarningCount, c.errs, c.warns)
			}
		})
	}
}
