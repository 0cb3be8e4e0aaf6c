package ncclog

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze/textio"
)

var writeSeeds = flag.Bool("write-seeds", false, "rewrite the fuzz seeds in testdata/fuzz from the samples")

// seedSize bounds a seed taken from a sample (cut at a line end), so that
// the fuzzer mutates realistic but short inputs.
const seedSize = 6 << 10

func seedOf(b []byte) []byte {
	if len(b) <= seedSize {
		return b
	}
	cut := bytes.LastIndexByte(b[:seedSize], '\n')
	if cut < 0 {
		cut = seedSize
	}
	return b[:cut+1]
}

// TestWriteFuzzSeeds (go test -run TestWriteFuzzSeeds -write-seeds) writes
// the go-fuzz corpus files of FuzzAnalyze and FuzzDetect from the samples;
// without the flag it checks that every sample has its seed.
func TestWriteFuzzSeeds(t *testing.T) {
	for _, fz := range []string{"FuzzAnalyze", "FuzzDetect"} {
		dir := filepath.Join("testdata", "fuzz", fz)
		for _, name := range samples(t) {
			seed := seedOf(sampleBody(t, name))
			path := filepath.Join(dir, "seed-"+strings.TrimSuffix(name, ".txt"))
			content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seed)
			if *writeSeeds {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != content {
				t.Errorf("%s: missing or stale fuzz seed (go test -run TestWriteFuzzSeeds -write-seeds)", path)
			}
		}
	}
}

func FuzzAnalyze(f *testing.F) {
	f.Add([]byte("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"))
	f.Add([]byte("a:1:1 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/IB/0(3)/GDRDMA/Shared\n" +
		"b:2:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0x1 - Init COMPLETE\n"))
	f.Add([]byte("x:1:1 [0] NCCL INFO === System : maxBw 1 totalBw 2 ===\nx:1:1 [0] NCCL INFO CPU/0\n" +
		"x:1:1 [0] NCCL INFO + NVL[1.0] - GPU/1\nx:1:1 [0] NCCL INFO      + NVL[2.0] - GPU/0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const name = "fuzz.log"
		r, err := Analyze(name, bytes.NewReader(b))
		if err != nil {
			var pe *textio.ParseError
			if !errors.As(err, &pe) || pe.Name != name || pe.Line < 1 || !strings.HasPrefix(err.Error(), name+":") {
				t.Fatalf("error %v does not name the file and a line", err)
			}
			return
		}
		checkInvariants(t, name, r)
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzDetect: Detect never panics, and never claims an input in which
// Analyze finds no NCCL message.
func FuzzDetect(f *testing.F) {
	f.Add([]byte("h:1:2 [0] NCCL INFO x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !Detect(b) {
			return
		}
		r, err := Analyze("detect.log", bytes.NewReader(b))
		if err != nil {
			t.Fatalf("Detect is true but Analyze fails: %v", err)
		}
		if r.NCCLLines == 0 {
			t.Fatal("Detect is true but Analyze finds no NCCL message")
		}
	})
}
