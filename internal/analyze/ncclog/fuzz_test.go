package ncclog

import (
	"bytes"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

// seedSize bounds a seed taken from a sample (cut at a line end), so that
// the fuzzer mutates realistic but short inputs.
const seedSize = 6 << 10

// TestWriteFuzzSeeds (go test -run TestWriteFuzzSeeds -write-seeds) writes
// the go-fuzz corpus files of FuzzAnalyze and FuzzDetect from the samples;
// without the flag it checks that every sample has its seed.
func TestWriteFuzzSeeds(t *testing.T) {
	readertest.FuzzSeeds(t, seedSize, "FuzzAnalyze", "FuzzDetect")
}

func FuzzAnalyze(f *testing.F) {
	f.Add([]byte("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"))
	f.Add([]byte("a:1:1 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/IB/0(3)/GDRDMA/Shared\n" +
		"b:2:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0x1 - Init COMPLETE\n"))
	f.Add([]byte("x:1:1 [0] NCCL INFO === System : maxBw 1 totalBw 2 ===\nx:1:1 [0] NCCL INFO CPU/0\n" +
		"x:1:1 [0] NCCL INFO + NVL[1.0] - GPU/1\nx:1:1 [0] NCCL INFO      + NVL[2.0] - GPU/0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const name = "fuzz.log"
		r, vs, err := Analyze(name, bytes.NewReader(b))
		readertest.CheckOutcome(t, name, r, vs, err)
		if err == nil {
			checkInvariants(t, name, r, vs)
		}
	})
}

// FuzzDetect: Detect never panics, and never claims an input in which
// Analyze finds neither an NCCL message nor a framework watchdog's line.
func FuzzDetect(f *testing.F) {
	f.Add([]byte("h:1:2 [0] NCCL INFO x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !Detect(b) {
			return
		}
		r, _, err := Analyze("detect.log", bytes.NewReader(b))
		if err != nil {
			t.Fatalf("Detect is true but Analyze fails: %v", err)
		}
		if r.NCCLLines == 0 && r.ErrorCount == 0 {
			t.Fatal("Detect is true but Analyze finds no NCCL message and no watchdog line")
		}
	})
}
