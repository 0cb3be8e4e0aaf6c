package analyze_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

var reHost = regexp.MustCompile(`(?:^|[\]>:\s])([A-Za-z0-9][\w.-]*):\d+:\d+ \[`)

// splitNodes writes the log at path (a corpus sample) as one file per
// host, as a job writes it with one log per node: a line goes to the host
// of its NCCL header, a line without one to the host of the line before.
func splitNodes(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(body(t, path))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]*bytes.Buffer{}
	var order []string
	cur := ""
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if m := reHost.FindSubmatch(line); m != nil {
			cur = string(m[1])
		}
		if parts[cur] == nil {
			parts[cur] = &bytes.Buffer{}
			order = append(order, cur)
		}
		parts[cur].Write(line)
	}
	dir := t.TempDir()
	var files []string
	for i, h := range order {
		if h == "" { // lines before the first NCCL line: the first node's
			continue
		}
		b := parts[h].Bytes()
		if i == 1 && parts[""] != nil {
			b = append(slices.Clone(parts[""].Bytes()), b...)
		}
		p := filepath.Join(dir, h+".log")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	if len(files) < 2 {
		t.Fatalf("%s: %d host(s)", path, len(files))
	}
	return files
}

func verdictKeys(vs []result.Result) []string {
	var out []string
	for _, v := range vs {
		if v.ID == "nccl.gdr" { // its message lists transports in the order first seen
			v.Message = ""
		}
		out = append(out, string(v.Status)+" "+v.ID+" "+v.Reason+" "+v.Message)
	}
	slices.Sort(out)
	return out
}

// TestJobCommand is issue 13 item 8 end to end: the logs of one job, one
// per node, one of them on the standard input, are judged as one job (one
// nccl-log output, the whole log's verdicts); --separate judges each alone.
func TestJobCommand(t *testing.T) {
	const sample = "ncclog/testdata/aws-p5-2node-efa-ofi-gdrdma-full.txt"
	whole, err := analyze.File(t.Context(), body(t, sample), ncclog.Kind)
	if err != nil {
		t.Fatal(err)
	}
	files := splitNodes(t, sample)
	stdin := os.Stdin
	t.Cleanup(func() { os.Stdin = stdin })
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.Stdin = f
	code, out, errOut := run(append([]string{"analyze", "--format", "json", "-"}, files[1:]...)...)
	var doc struct {
		Results []result.Result `json:"results"`
		Data    []struct {
			File    string          `json:"file"`
			Kind    string          `json:"kind"`
			Report  json.RawMessage `json:"report"`
			Results [2]int          `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d %s: %v\n%s", code, errOut, err, out)
	}
	var logs int
	for _, o := range doc.Data {
		if o.Kind != ncclog.Kind {
			continue
		}
		logs++
		if want := "- + " + strings.Join(files[1:], " + "); o.File != want {
			t.Errorf("job file %q, want %q", o.File, want)
		}
		got := doc.Results[o.Results[0]:o.Results[1]]
		if w, g := verdictKeys(whole.Verdicts), verdictKeys(got); !slices.Equal(w, g) {
			t.Errorf("job verdicts:\n  %s\nwhole log:\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
		}
		var rep ncclog.Report
		if err := json.Unmarshal(o.Report, &rep); err != nil || len(rep.Files) != len(files) || rep.Files[0].Name != "-" || len(rep.Hosts) != 2 {
			t.Errorf("job report: %v, files %+v, hosts %d", err, rep.Files, len(rep.Hosts))
		}
		for _, v := range got {
			for _, e := range v.Evidence {
				if !strings.HasPrefix(e.Source, "-:") && !slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(e.Source, f+":") }) {
					t.Errorf("%s: evidence %q names no file of the job", v.Ref(), e.Source)
				}
			}
		}
	}
	if logs != 1 || code != 0 {
		t.Errorf("exit %d, %d nccl-log outputs, want one job", code, logs)
	}

	// A file given twice: not one job of twice its lines.
	code, out, _ = run("analyze", "--format", "json", files[1], files[1])
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	logs = 0
	for _, o := range doc.Data {
		if o.Kind == ncclog.Kind {
			logs++
		}
	}
	if logs != 2 {
		t.Errorf("a file given twice: exit %d, %d nccl-log outputs, want the two files judged one by one", code, logs)
	}

	code, out, _ = run(append([]string{"analyze", "--separate", "--format", "json"}, files...)...)
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	logs = 0
	for _, o := range doc.Data {
		if o.Kind == ncclog.Kind {
			logs++
		}
	}
	if logs != len(files) {
		t.Errorf("--separate: exit %d, %d nccl-log outputs, want %d", code, logs, len(files))
	}
}
