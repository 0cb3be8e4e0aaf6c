package nccltopo

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

// TestWriteFuzzSeeds (go test -run TestWriteFuzzSeeds -write-seeds) writes
// the go-fuzz corpus files of FuzzAnalyze and FuzzDetect from the samples;
// without the flag it checks that every sample has its seed.
func TestWriteFuzzSeeds(t *testing.T) {
	readertest.FuzzSeeds(t, 0, "FuzzAnalyze", "FuzzDetect")
}

func FuzzAnalyze(f *testing.F) {
	f.Add([]byte(`<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0" class="0x030200"><gpu dev="0" sm="90"><nvlink target="0000:01:00.0" count="1"/></gpu></pci></cpu></system>`))
	f.Add([]byte(`<graphs version="1"><graph id="0" pattern="4" nchannels="1" typeintra="NVL"><channel><net dev="0"/><gpu dev="0"/></channel></graph></graphs>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		const name = "fuzz.xml"
		r, vs, err := Analyze(name, bytes.NewReader(b))
		readertest.CheckOutcome(t, name, r, vs, err)
		if err != nil {
			return
		}
		if r.Kind != "system" && r.Kind != "graphs" {
			t.Fatalf("kind %q", r.Kind)
		}
		if r.Truncated != (r.Problem != "") || r.Problem != "" && !strings.HasPrefix(r.Problem, name+":") {
			t.Fatalf("truncated %v with problem %q", r.Truncated, r.Problem)
		}
		for _, v := range vs {
			if !v.Status.Valid() || v.ID == "" || v.Reason == "" || v.Subject == "" || v.Message == "" {
				t.Fatalf("incomplete verdict %+v", v)
			}
			for _, e := range v.Evidence {
				if !strings.HasPrefix(e.Source, name+":") {
					t.Fatalf("evidence %+v", e)
				}
			}
		}
		if r.System != nil && len(r.System.Paths) > len(r.System.GPUs) {
			t.Fatalf("%d paths for %d GPUs", len(r.System.Paths), len(r.System.GPUs))
		}
	})
}

// FuzzDetect: Detect never panics, and what it claims Analyze can read.
func FuzzDetect(f *testing.F) {
	f.Add([]byte("<system version=\"1\">"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !Detect(b) {
			return
		}
		if _, _, err := Analyze("detect.xml", bytes.NewReader(b)); err != nil {
			t.Fatalf("Detect is true but Analyze fails: %v", err)
		}
	})
}
