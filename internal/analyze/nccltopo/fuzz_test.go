package nccltopo

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

// TestWriteFuzzSeeds (go test -run TestWriteFuzzSeeds -write-seeds) writes
// the go-fuzz corpus files of FuzzAnalyze and FuzzDetect from the samples;
// without the flag it checks that every sample has its seed.
func TestWriteFuzzSeeds(t *testing.T) {
	for _, fz := range []string{"FuzzAnalyze", "FuzzDetect"} {
		dir := filepath.Join("testdata", "fuzz", fz)
		for _, name := range samples(t) {
			path := filepath.Join(dir, "seed-"+strings.TrimSuffix(name, ".txt"))
			content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", sampleBody(t, name))
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
	f.Add([]byte(`<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0" class="0x030200"><gpu dev="0" sm="90"><nvlink target="0000:01:00.0" count="1"/></gpu></pci></cpu></system>`))
	f.Add([]byte(`<graphs version="1"><graph id="0" pattern="4" nchannels="1" typeintra="NVL"><channel><net dev="0"/><gpu dev="0"/></channel></graph></graphs>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		const name = "fuzz.xml"
		r, err := Analyze(name, bytes.NewReader(b))
		if err != nil {
			var pe *textio.ParseError
			if !errors.As(err, &pe) || pe.Name != name || pe.Line < 1 || !strings.HasPrefix(err.Error(), name+":") {
				t.Fatalf("error %v does not name the file and a line", err)
			}
			return
		}
		if r.Kind != "system" && r.Kind != "graphs" {
			t.Fatalf("kind %q", r.Kind)
		}
		if r.Truncated != (r.Problem != "") || r.Problem != "" && !strings.HasPrefix(r.Problem, name+":") {
			t.Fatalf("truncated %v with problem %q", r.Truncated, r.Problem)
		}
		for _, v := range r.Verdicts {
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
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteText(io.Discard); err != nil {
			t.Fatal(err)
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
		if _, err := Analyze("detect.xml", bytes.NewReader(b)); err != nil {
			t.Fatalf("Detect is true but Analyze fails: %v", err)
		}
	})
}
