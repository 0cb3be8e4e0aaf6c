package ncclog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// splitByHost splits a log into one log per host, as a job writes it with
// one file per node: a line goes to the host whose name starts its NCCL
// header ("host:pid:tid"), a line without one to the host of the line
// before it. The order of lines within each host is kept.
func splitByHost(t *testing.T, data []byte, hosts []string) [][]byte {
	t.Helper()
	sorted := slices.Clone(hosts)
	// The longest name first: "node1" must not take "node10"'s lines.
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	pats := make([]*regexp.Regexp, len(sorted))
	for i, h := range sorted {
		pats[i] = regexp.MustCompile(`(^|[\s\]>:])` + regexp.QuoteMeta(h) + `:\d+:\d+ `)
	}
	parts := map[string]*bytes.Buffer{}
	cur := sorted[0]
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		for i, p := range pats {
			if p.Match(line) {
				cur = sorted[i]
				break
			}
		}
		if parts[cur] == nil {
			parts[cur] = &bytes.Buffer{}
		}
		parts[cur].Write(line)
	}
	var out [][]byte
	for _, h := range hosts {
		if b := parts[h]; b != nil && b.Len() > 0 {
			out = append(out, b.Bytes())
		}
	}
	return out
}

// verdictKey is what a verdict says, without where its evidence lies
// (the lines of a split log are numbered otherwise).
// A list in parentheses ("(A x3, B(0) x1)") is in the order its items
// were first seen, which differs when the lines come in another order: its
// items are sorted.
func verdictKey(v result.Result) string {
	return fmt.Sprintf("%s %s %s %s: %s", v.Status, v.ID, v.Reason, v.Subject, sortLists(v.Message))
}

func sortLists(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, " (")
		if i < 0 {
			return b.String() + s
		}
		depth, end := 0, -1
		for j := i + 1; j < len(s) && end < 0; j++ {
			switch s[j] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					end = j
				}
			}
		}
		if end < 0 {
			return b.String() + s
		}
		items := strings.Split(s[i+2:end], ", ")
		slices.Sort(items)
		b.WriteString(s[:i+2] + strings.Join(items, ", ") + ")")
		s = s[end+1:]
	}
}

// TestJobSplitByHost: a multi-node log split by host into one file per
// node and read as one Job gives the whole log's verdicts and view of the
// job (hosts, ranks, channels, transports), while the files read one by
// one do not all see the job.
func TestJobSplitByHost(t *testing.T) {
	samples, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	split := 0
	defer func() {
		// The real multi-node samples: at least these must have been split.
		if split < 4 && !t.Failed() {
			t.Errorf("only %d samples had two hosts or more that printed", split)
		}
	}()
	for _, path := range samples {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			whole, wholeVs, err := Analyze(name, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			var hosts []string
			for _, h := range whole.Hosts {
				hosts = append(hosts, h.Name)
			}
			if len(hosts) < 2 {
				t.Skipf("one host or none printed: %v", hosts)
			}
			parts := splitByHost(t, data, hosts)
			if len(parts) < 2 {
				t.Skipf("one host of %v printed", hosts)
			}
			split++
			j := NewJob("job")
			var names []string
			for i, p := range parts {
				n := fmt.Sprintf("node%d.log", i)
				names = append(names, n)
				if err := j.Add(n, bytes.NewReader(p)); err != nil {
					t.Fatalf("%s: %v", n, err)
				}
			}
			rep, vs := j.Report()
			want, got := keys(wholeVs), keys(vs)
			if !slices.Equal(want, got) {
				t.Errorf("job verdicts differ from the whole log's:\nwhole:\n  %s\njob:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
			}
			if w, g := hostView(whole), hostView(rep); w != g {
				t.Errorf("hosts: whole %s, job %s", w, g)
			}
			if w, g := chanView(whole), chanView(rep); w != g {
				t.Errorf("channels: whole %s, job %s", w, g)
			}
			if len(rep.Ranks) != len(whole.Ranks) || rep.Lines != whole.Lines || rep.NCCLLines != whole.NCCLLines {
				t.Errorf("ranks %d lines %d nccl %d, whole %d %d %d", len(rep.Ranks), rep.Lines, rep.NCCLLines, len(whole.Ranks), whole.Lines, whole.NCCLLines)
			}
			if len(rep.Files) != len(parts) || rep.Files[0].FirstLine != 1 || rep.Files[1].FirstLine != rep.Files[0].Lines+1 {
				t.Errorf("files %+v", rep.Files)
			}
			// Every evidence line names a file of the job and a line in it
			// that holds the quoted text.
			lines := map[string][]string{}
			for i, p := range parts {
				lines[names[i]] = strings.Split(string(p), "\n")
			}
			for _, v := range vs {
				for _, e := range v.Evidence {
					f, no, ok := strings.Cut(e.Source, ":")
					var n int
					if _, err := fmt.Sscan(no, &n); !ok || err != nil || lines[f] == nil || n < 1 || n > len(lines[f]) {
						t.Errorf("%s: evidence %q names no line of the job", v.Ref(), e.Source)
						continue
					}
					if e.Value != "" && !strings.Contains(lines[f][n-1], firstWords(e.Value)) {
						t.Errorf("%s: evidence %s is %q, the line is %q", v.Ref(), e.Source, e.Value, lines[f][n-1])
					}
				}
			}
		})
	}
}

// TestJobPerFileDiffers: on a two-node log the files read one by one do
// not give the job's verdicts (they see one host each), which is why a
// job is judged as one.
func TestJobPerFileDiffers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "synthetic-2node-ib-no-gdr.txt"))
	if err != nil {
		t.Fatal(err)
	}
	whole, wholeVs, err := Analyze("whole", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, h := range whole.Hosts {
		hosts = append(hosts, h.Name)
	}
	same := 0
	for i, p := range splitByHost(t, data, hosts) {
		_, vs, err := Analyze(fmt.Sprint("node", i), bytes.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(keys(vs), keys(wholeVs)) {
			same++
		}
	}
	if same == len(hosts) {
		t.Skip("every node's log alone gives the job's verdicts: the sample does not show the difference")
	}
}

// TestJobErrors: a log the job cannot read is an error naming that file
// and its own line; the job goes on with the others.
func TestJobErrors(t *testing.T) {
	j := NewJob("job")
	if err := j.Add("a.log", strings.NewReader("h1:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\nh1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n")); err != nil {
		t.Fatal(err)
	}
	err := j.Add("b.log", strings.NewReader(""))
	var pe *textio.ParseError
	if !errors.As(err, &pe) || pe.Name != "b.log" || pe.Line != 1 {
		t.Errorf("empty log: %v", err)
	}
	if err := j.Add("c.log", strings.NewReader("h2:2:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 2000 - Init COMPLETE\n")); err != nil {
		t.Fatal(err)
	}
	rep, _ := j.Report()
	if rep == nil || len(rep.Hosts) != 2 || len(rep.Files) != 3 {
		t.Fatalf("job: %+v", rep)
	}
	if f, n := j.a.where(rep.Files[2].FirstLine); f != "c.log" || n != 1 {
		t.Errorf("line %d is %s:%d, want c.log:1", rep.Files[2].FirstLine, f, n)
	}
	if rep, vs := NewJob("none").Report(); rep != nil || vs != nil {
		t.Errorf("a job of no log has a report")
	}
}

func keys(vs []result.Result) []string {
	var out []string
	for _, v := range vs {
		out = append(out, verdictKey(v))
	}
	slices.Sort(out)
	return out
}

func hostView(r *Report) string {
	var b strings.Builder
	for _, h := range r.Hosts {
		fmt.Fprintf(&b, "%s ranks %v gpus %v; ", h.Name, h.Ranks, h.GPUs)
	}
	return b.String()
}

func chanView(r *Report) string {
	c := r.Channels
	// The order of the transports is the order they were first seen in.
	by := slices.Clone(c.ByTransport)
	slices.SortFunc(by, func(a, b TransportCount) int { return strings.Compare(a.Transport, b.Transport) })
	c.ByTransport = by
	return fmt.Sprintf("lines %d conns %d intra %d inter %d unknown %d by %+v", c.TransportLines, c.Connections, c.IntraNode, c.InterNode, c.UnknownLocality, c.ByTransport)
}

// firstWords is the start of an evidence value, up to where a clip may
// have cut it.
func firstWords(s string) string {
	s = strings.TrimSuffix(s, "...")
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}
