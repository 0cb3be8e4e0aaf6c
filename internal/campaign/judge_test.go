package campaign

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestObserve(t *testing.T) {
	real, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "h200x1-quick", "raw", "nccl", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	step := &Step{ID: "s0001", Nodes: []string{"gpu01", "gpu02"}, Rail: -1}
	ok := string(benchJSON(step.Nodes, 8, 361.5))
	other := string(benchJSON([]string{"laptop"}, 16, 361.5))
	cases := []struct {
		name   string
		files  map[string]string
		status Status
		bw     float64
		why    string
	}{
		{name: "nothing", files: nil, status: Missing, why: "did not run"},
		{name: "not finished", files: map[string]string{"json": ok[:40]}, status: Missing, why: "has not finished"},
		{name: "measured", files: map[string]string{"json": ok, "rc": "0\n"}, status: Pass, bw: 361.5, why: "all_reduce 1G: busbw 361.5"},
		// The H200 machine's real results.json: read, and refused: one
		// rank on one machine is not the step's 16 on gpu01 and gpu02.
		{name: "real document", files: map[string]string{"json": string(real), "rc": "0"}, status: Fail, why: "all_reduce of 1 ranks, but the step runs 16"},
		// A result from other machines clears nothing (the review's D3):
		// 16 ranks all on one laptop, 2 ranks, a rank on another node,
		// the ranks' hosts unknown.
		{name: "other machines", files: map[string]string{"json": other, "rc": "0"}, status: Fail, why: "rank 0 ran on laptop, which is not one of the step's nodes (gpu01,gpu02)"},
		{name: "two ranks", files: map[string]string{"json": string(benchJSON([]string{"gpu01", "gpu02"}, 1, 100)), "rc": "0"}, status: Fail, why: "all_reduce of 2 ranks, but the step runs 16 (2 nodes × 8 GPUs)"},
		{name: "one node twice", files: map[string]string{"json": strings.ReplaceAll(ok, `"host":"gpu02"`, `"host":"GPU01.cluster"`), "rc": "0"}, status: Fail, why: "16 ranks ran on gpu01, want 8"},
		{name: "hosts unknown", files: map[string]string{"json": ok[:strings.Index(ok, `"ranks":[{`)] + `"ranks":[]}}`, "rc": "0"}, status: Fail, why: "the job names 0 of its 16 ranks"},
		// The review's P20: 1e308 GB/s judged a pass.
		{name: "implausible busbw", files: map[string]string{"json": strings.ReplaceAll(ok, `"busbw_gbs":361.500`, `"busbw_gbs":1e308`), "rc": "0"}, status: Fail, why: "is not a measurement"},
		{name: "fqdn hosts", files: map[string]string{"json": strings.ReplaceAll(strings.ReplaceAll(ok, `"host":"gpu02"`, `"host":"gpu02.cluster.example"`), `"host":"gpu01"`, `"host":"GPU01"`), "rc": "0"}, status: Pass, bw: 361.5, why: "busbw 361.5"},
		{name: "exit without result", files: map[string]string{"rc": "1\n", "err": "x\nrank 3 of 16: NCCL error: unhandled system error\n"}, status: Fail, why: "exit status 1; results/s0001.json: no result; stderr: rank 3 of 16: NCCL error"},
		{name: "exit with result", files: map[string]string{"json": ok, "rc": "1"}, status: Fail, why: "measured 361.5 GB/s, but the step failed"},
		{name: "empty", files: map[string]string{"json": "", "rc": "0"}, status: Fail, why: "results/s0001.json: empty"},
		{name: "garbage", files: map[string]string{"json": "srun: error: Unable to create step", "rc": "0"}, status: Fail, why: "results/s0001.json: not bench nccl's JSON"},
		{name: "truncated", files: map[string]string{"json": ok[:len(ok)/2], "rc": "0"}, status: Fail, why: "not bench nccl's JSON"},
		{name: "other schema", files: map[string]string{"json": `{"schema":"gdrcheck.run/v1"}`, "rc": "0"}, status: Fail, why: `schema "gdrcheck.run/v1"`},
		{name: "rank failed", files: map[string]string{"json": `{"schema":"gdrcheck.bench-nccl/v1","job":{"failures":[{"rank":9,"host":"gpu0002","reason":"never arrived"}]}}`, "rc": "1"}, status: Fail, why: "rank 9 (gpu0002): never arrived"},
		{name: "wrong values", files: map[string]string{"json": strings.Replace(ok, `"avg_busbw_gbs":361.500,"wrong":0`, `"avg_busbw_gbs":361.500,"wrong":12`, 1), "rc": "0"}, status: Fail, why: "12 wrong values"},
		{name: "bench error", files: map[string]string{"json": `{"schema":"gdrcheck.bench-nccl/v1","error":"ncclCommInitRank: remote process exited"}`, "rc": "1"}, status: Fail, why: "remote process exited"},
		{name: "no all_reduce", files: map[string]string{"json": `{"schema":"gdrcheck.bench-nccl/v1","complete":true,"measurements":[{"collective":"all_gather","rows":[]}]}`, "rc": "0"}, status: Fail, why: "no all_reduce row"},
		{name: "incomplete", files: map[string]string{"json": strings.Replace(ok, `"complete":true`, `"complete":false`, 1), "rc": "0"}, status: Fail, bw: 361.5, why: "incomplete run"},
		// An exit status other than 0 is a failure, a negative one too.
		{name: "negative rc", files: map[string]string{"json": ok, "rc": "-1"}, status: Fail, why: "exit status -1; measured 361.5 GB/s, but the step failed"},
		// The largest row without a busbw cell is not a measurement of 0.
		{name: "row without busbw", files: map[string]string{"json": `{"schema":"gdrcheck.bench-nccl/v1","complete":true,"measurements":[{"collective":"all_reduce","rows":[{"size_bytes":1024}]}]}`, "rc": "0"}, status: Fail, why: "all_reduce 1K: no bus bandwidth measured"},
		{name: "bad rc", files: map[string]string{"json": ok, "rc": "killed"}, status: Fail, why: `results/s0001.rc: "killed" is not an exit status`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := MemFS{}
			for ext, data := range c.files {
				m["results/s0001."+ext] = []byte(data)
			}
			o := Observe(m, step, 8)
			if o.Status != c.status || o.BusBW != c.bw || !strings.Contains(o.Why, c.why) {
				t.Errorf("got %s %g %q, want %s %g and a reason containing %q", o.Status, o.BusBW, o.Why, c.status, c.bw, c.why)
			}
		})
	}
}

// runRound writes the round's results but for the steps of skip.
func runRound(f *Fabric, r *Round, skip func(*Step) bool) MemFS {
	m := f.Run(r)
	for _, s := range r.Steps {
		if skip(s) {
			delete(m, ResultsDir+"/"+s.ID+".json")
			delete(m, ResultsDir+"/"+s.ID+".rc")
		}
	}
	return m
}

// TestMissing: a round not run, or run in part, is refused; with
// allowMissing the steps that did not run are planned again, and the
// campaign still finds the fault.
func TestMissing(t *testing.T) {
	c, err := New(config(64, Pairs, true))
	if err != nil {
		t.Fatal(err)
	}
	f := NewFabric(3)
	f.BadNodes["gpu0010"] = true
	var me *MissingError
	if err := c.Record(MemFS{}, true); !errors.As(err, &me) || !strings.Contains(err.Error(), "round 1 has no results yet") {
		t.Fatalf("a round not run: %v", err)
	}
	// gpu0010's pair (s0010, with gpu0042) and one rail of another pair
	// never ran.
	skip := func(s *Step) bool { return s.Chain == "s0010" || s.ID == "s0003-r5" }
	err = c.Record(runRound(f, c.Latest(), skip), false)
	if !errors.As(err, &me) || len(me.Steps) != 10 || !strings.Contains(err.Error(), "10 of 288 steps have no exit status") || !strings.Contains(err.Error(), "--allow-missing") {
		t.Fatalf("a round run in part: %v", err)
	}
	if c.Latest().Read {
		t.Fatal("a refused round is recorded")
	}
	if err := c.Record(runRound(f, c.Latest(), skip), true); err != nil {
		t.Fatal(err)
	}
	r2, fd, err := c.Plan()
	if err != nil || fd != nil {
		t.Fatalf("plan: %v, %v", err, fd)
	}
	var again []string
	for _, s := range r2.Steps {
		if s.Role == RoleAgain {
			again = append(again, s.ID+":"+strings.Join(s.Nodes, "+"))
		}
	}
	want := "s0001-r5:gpu0003+gpu0035 s0002:gpu0010+gpu0042 s0002-r0:gpu0010+gpu0042 s0002-r1:gpu0010+gpu0042 s0002-r2:gpu0010+gpu0042 s0002-r3:gpu0010+gpu0042 s0002-r4:gpu0010+gpu0042 s0002-r5:gpu0010+gpu0042 s0002-r6:gpu0010+gpu0042 s0002-r7:gpu0010+gpu0042"
	if got := strings.Join(again, " "); got != want {
		t.Errorf("planned again:\n%s\nwant\n%s", got, want)
	}
	for {
		if err := c.Record(f.Run(c.Latest()), false); err != nil {
			t.Fatal(err)
		}
		if _, fd, err = c.Plan(); err != nil {
			t.Fatal(err)
		}
		if fd != nil {
			break
		}
	}
	if got := accused(fd); len(got) != 1 || got[0] != "node gpu0010" {
		t.Errorf("accused %q", got)
	}
}

// TestRoundTrip: the campaign file decodes to the same campaign, which
// Check accepts and plans on as before; a damaged one is refused.
func TestRoundTrip(t *testing.T) {
	f := NewFabric(5)
	f.BadLinks["gpu0020"] = []int{1}
	c, _, err := Simulate(config(64, Pairs, true), f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var d Campaign
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	d.Findings = nil
	_, fd, err := d.Plan()
	if err != nil || fd == nil || strings.Join(accused(fd), ",") != "link gpu0020 mlx5_1" {
		t.Fatalf("plan after decoding: %v %v", fd, err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Campaign)
		err  string
	}{
		{"schema", func(c *Campaign) { c.Schema = "gdrcheck.campaign/v9" }, "schema"},
		{"stranger", func(c *Campaign) { c.Rounds[0].Steps[0].Nodes[0] = "evil" }, `node "evil" is not in the campaign`},
		{"id", func(c *Campaign) { c.Rounds[0].Steps[0].ID = "../../x" }, "is not a step name"},
		{"rail", func(c *Campaign) { c.Rounds[0].Steps[1].Rail = 9 }, "rail 9"},
		{"unread", func(c *Campaign) { c.Rounds[0].Read = false }, "never read"},
		{"no outcome", func(c *Campaign) { c.Rounds[0].Steps[2].Outcome = nil }, "read, but no outcome"},
		{"unknown outcome", func(c *Campaign) { c.Rounds[0].Steps[2].Outcome.Status = "ok" }, `outcome "ok"`},
		{"host", func(c *Campaign) { c.Nodes[3] = "a b" }, "node 4"},
	} {
		var e Campaign
		_ = json.Unmarshal(b, &e)
		c.mod(&e)
		if err := e.Check(); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}

// TestRelativeNeedsPeers: relative judging refuses to judge a kind with
// too few measured steps instead of guessing.
func TestRelativeNeedsPeers(t *testing.T) {
	c, err := New(config(12, Pairs, false))
	if err != nil {
		t.Fatal(err)
	}
	f := NewFabric(1)
	m := runRound(f, c.Latest(), func(s *Step) bool { return s.Chain >= "s0003" })
	for k := range m {
		if strings.HasSuffix(k, ".rc") && !strings.Contains(k, "s0001") && !strings.Contains(k, "s0002") {
			delete(m, k)
		}
	}
	err = c.Record(m, true)
	if err == nil || !strings.Contains(err.Error(), "2 measured step(s) of the node-level steps so far, too few") {
		t.Fatalf("got %v", err)
	}
}

// TestRailNeverMeasured: a rail whose every step of a pair was missing up
// to the last round is unresolved for both nodes, not passed (their
// node-level pass does not clear it: the rail did not run in its chain).
func TestRailNeverMeasured(t *testing.T) {
	cfg := config(16, Pairs, true)
	cfg.MaxRounds = 2
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFabric(3)
	f.BadNodes["gpu0010"] = true // a fault elsewhere keeps the rounds running
	skip := func(s *Step) bool { return s.Rail == 5 && s.Nodes[0] == "gpu0001" }
	var fd *Findings
	for fd == nil {
		if err := c.Record(runRound(f, c.Latest(), skip), true); err != nil {
			t.Fatal(err)
		}
		if _, fd, err = c.Plan(); err != nil {
			t.Fatal(err)
		}
	}
	if got := accused(fd); strings.Join(got, ",") != "node gpu0010" {
		t.Errorf("accused %q", got)
	}
	var never []string
	for _, u := range fd.Unresolved {
		if strings.Contains(u.Why, "never measured") {
			never = append(never, u.Node+" "+u.Rail)
		}
	}
	if got := strings.Join(never, ","); got != "gpu0001 mlx5_5,gpu0009 mlx5_5" || len(fd.Unresolved) != 2 {
		t.Errorf("unresolved %+v, want gpu0001 and gpu0009 on mlx5_5 never measured", fd.Unresolved)
	}
}

// endless is a file system of one regular file that never ends (a sparse
// file of any size, /dev/zero behind a link), counting what is read of it.
type endless struct{ read *int64 }

func (e endless) Open(name string) (fs.File, error) {
	if name != "results/s0001.json" {
		return nil, fs.ErrNotExist
	}
	return endlessFile(e), nil
}

type endlessFile endless

func (f endlessFile) Stat() (fs.FileInfo, error) { return fstest.MapFS{"f": {}}.Stat("f") }
func (f endlessFile) Close() error               { return nil }
func (f endlessFile) Read(p []byte) (int, error) {
	if *f.read > 1<<30 {
		return 0, io.EOF // the old reader's end: 1 GiB read
	}
	clear(p)
	*f.read += int64(len(p))
	return len(p), nil
}

// The 16 MiB cap of a step's result bounds what is read (the review's
// D2: a 600 MB file took 2.1 GB before it was refused, /dev/zero all the
// machine's memory).
func TestObserveBoundedRead(t *testing.T) {
	var read int64
	fsys := unionFS{endless{&read}, MemFS{"results/s0001.rc": []byte("0\n")}}
	o := Observe(fsys, &Step{ID: "s0001", Nodes: []string{"a", "b"}}, 8)
	if o.Status != Fail || !strings.Contains(o.Why, "larger than 16 MiB") {
		t.Errorf("%+v", o)
	}
	if read > maxResult+1<<20 {
		t.Errorf("read %d MiB of it", read>>20)
	}
}

// unionFS opens a name in the first file system that has it.
type unionFS []fs.FS

func (u unionFS) Open(name string) (fs.File, error) {
	for _, f := range u {
		if x, err := f.Open(name); err == nil {
			return x, nil
		}
	}
	return nil, fs.ErrNotExist
}

// The next steps printed after a round are lines to paste into a shell:
// a campaign folder with shell syntax in its name is quoted (the review's
// D16: `--next o12;touch PWN` ran touch when pasted).
func TestRoundTextQuoted(t *testing.T) {
	var b strings.Builder
	if err := (RoundSummary{Round: 1, Dir: "round-01"}).WriteText(&b, "o12;touch PWN", false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Run 'o12;touch PWN/round-01/steps.sh' inside", "then: gdrcheck fleet plan --next 'o12;touch PWN'"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
}
