package analyze_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// pasteForms are the ways a paste wraps an output (issue 13 item 6): each
// must leave every reader's verdicts as they are on the plain output.
var pasteForms = []struct {
	name string
	text bool // only for text outputs (a JSON output is not read by lines)
	wrap func(body []byte) []byte
}{
	{"crlf", false, func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }},
	{"fenced", false, func(b []byte) []byte { return append(append([]byte("```text\n"), b...), "\n```\n"...) }},
	{"quoted-fenced", true, func(b []byte) []byte { return prefixLines(append(append([]byte("```\n"), b...), "\n```\n"...), "> ") }},
	{"prompt", true, func(b []byte) []byte { return append([]byte("user@node-1:~/run$ cat output.txt\n"), b...) }},
	{"torchrun", true, func(b []byte) []byte { return prefixLines(b, "[rank0]:") }},
	{"kubectl-timestamps", true, func(b []byte) []byte { return prefixLines(b, "2026-12-03T17:53:06.123456789Z ") }},
	{"mpirun-tags", true, func(b []byte) []byte { return prefixLines(b, "[1,0]<stdout>:") }},
	{"mpiexec-prepend-rank", true, func(b []byte) []byte { return prefixLines(b, "[0] ") }},
	{"srun-label", true, func(b []byte) []byte { return prefixLines(b, " 3: ") }},
	{"harness-indent", true, func(b []byte) []byte { return prefixLines(b, "        ") }},
	{"compose", true, func(b []byte) []byte { return prefixLines(b, "worker-1  | ") }},
	// Logger prefixes no shape lists (issue 26 class 7): learned from
	// the input. A test harness's (the shape issue 26 quotes), Ray's
	// worker prefix, a journal line.
	{"harness-logger", true, func(b []byte) []byte {
		return prefixLines(b, "2019-07-16 03:43:24,132 process          L0458 DEBUG| [stdout] ")
	}},
	{"ray-worker", true, func(b []byte) []byte { return prefixLines(b, "(RayWorkerWrapper pid=539, ip=10.225.128.18) ") }},
	{"journal", true, func(b []byte) []byte { return prefixLines(b, "Jul 16 03:43:24 host kubelet[123]: ") }},
	{"pod-and-timestamp", true, func(b []byte) []byte {
		return prefixLines(prefixLines(b, "[2026-12-03 17:53:06] "), "[pod/bench-0/main] ")
	}},
}

func prefixLines(b []byte, p string) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		out = append(out, p...)
		out = append(out, l...)
	}
	return out
}

// pasteKeys are what a verdict says, without its evidence (whose line
// numbers move with the added lines).
func pasteKeys(o *Output) []string {
	var ks []string
	for _, v := range o.Verdicts {
		ks = append(ks, fmt.Sprintf("%s %s %s %s", v.Status, v.ID, v.Reason, v.Subject))
	}
	slices.Sort(ks)
	return ks
}

// TestPasteForms reads every reader's samples plain and in every paste
// form (CRLF, a code fence, a quoted fence, a shell prompt, torchrun tags,
// mpirun tags, mpiexec -prepend-rank tags, srun labels, a harness's indentation, compose names,
// kubectl timestamps, a pod prefix around a bracketed timestamp): the
// verdicts must be the same.
func TestPasteForms(t *testing.T) {
	dirs := map[string]string{"nvidia-smi-topo": "smitopo", "dcgmi": "dcgmi", "nvbandwidth": "nvbandwidth",
		"perftest": "perftest", "nccl-topo": "nccltopo", "nccl-tests": "nccltests", "nccl-ras": "ncclras", "nccl-log": "ncclog"}
	for _, rd := range Readers() {
		files, _ := filepath.Glob(filepath.Join(dirs[rd.Kind()], "testdata", "*.txt"))
		if len(files) == 0 {
			t.Fatalf("%s: no samples", rd.Kind())
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			body, ok := readertest.CorpusBody(raw)
			if !ok {
				continue
			}
			name := filepath.Base(f)
			plain, err := Read(name, bytes.NewReader(body), rd)
			if err != nil {
				continue // a sample the reader refuses (the error tests cover it)
			}
			want := pasteKeys(plain)
			isJSON := textio.StartsJSON(body)
			// A second launcher's tags on top of the first's are not a real
			// paste (nccl-tests reads one level of rank tags itself).
			tagged := false
			if n := textio.DetectPaste(body, 0).Note(); n != nil {
				tagged = slices.ContainsFunc(n.Prefixes, func(p string) bool {
					return strings.HasPrefix(p, "mpirun") || strings.HasPrefix(p, "mpiexec") || strings.HasPrefix(p, "srun")
				})
			}
			for _, form := range pasteForms {
				if form.text && isJSON || tagged && (form.name == "mpirun-tags" || form.name == "mpiexec-prepend-rank" || form.name == "srun-label") {
					continue
				}
				t.Run(rd.Kind()+"/"+name+"/"+form.name, func(t *testing.T) {
					got, err := Read(name, bytes.NewReader(form.wrap(body)), rd)
					if err != nil {
						t.Fatalf("plain read, %s not: %v", form.name, err)
					}
					if g := pasteKeys(got); !slices.Equal(g, want) {
						t.Errorf("verdicts differ from the plain output's:\n got %s\nwant %s", strings.Join(g, "\n     "), strings.Join(want, "\n     "))
					}
				})
			}
		}
	}
}
