package rdma

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// TestLatencyJudge: a latency has no line rate, so a GPU-memory run is
// judged only against the same pair's host-memory control; without one it
// is not judged (it passed, measured or not, before).
func TestLatencyJudge(t *testing.T) {
	e := Entry{GPU: 0, GPUBusID: "0000:18:00.0", NIC: "mlx5_0", Runs: []Run{{Memory: MemPeerMem, Server: Cmd{Tool: WriteLat}}, {Memory: MemHost, Server: Cmd{Tool: WriteLat}}}}
	gpu := func(us float64) Outcome { return Outcome{Memory: MemPeerMem, LatencyUS: us, Bytes: 2} }
	host := Outcome{Memory: MemHost, LatencyUS: 1.0, Bytes: 2}
	for _, c := range []struct {
		name   string
		outs   []Outcome
		status result.Status
		reason string
	}{
		{"within twice host", []Outcome{gpu(1.5), host}, result.Pass, "WithinTwiceHost"},
		{"over twice host", []Outcome{gpu(2.5), host}, result.Warn, "GPULatencyHigh"},
		{"no host control", []Outcome{gpu(1.5)}, result.Unknown, "NoHostControl"},
		{"host control failed", []Outcome{gpu(1.5), {Memory: MemHost, Cause: CauseServerDied}}, result.Unknown, "NoHostControl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := Judge([]PairResult{{Entry: e, Outcomes: c.outs}}, DefaultJudging)
			if len(rs) == 0 || rs[0].Status != c.status || rs[0].Reason != c.reason {
				t.Errorf("%+v, want %s %s first", rs, c.status, c.reason)
			}
		})
	}
}
