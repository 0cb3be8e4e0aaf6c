package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/launch"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
)

// perftestStandIn is an ib_write_bw that serves as perftest's server (no
// address argument: the banner, then it serves one client) and prints a
// 400G table of the reader's corpus as the client.
func perftestStandIn(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../analyze/perftest/testdata/gke-a3ultra-h200-ib-write-bw-host-failed-status10.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(b), "\n---\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "table.txt"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// The server stays until its client was served (the marker M, by NIC
	// and port), at most 0.3 s.
	script := fmt.Sprintf(`#!/bin/sh
D=%q; nic=; port=; prev=
for a in "$@"; do [ "$prev" = -d ] && nic="$a"; [ "$prev" = -p ] && port="$a"; prev="$a"; last="$a"; done
M="$D/served-$nic-$port"
case "$last" in
127.0.0.1) cat "$D/table.txt"; touch "$M" ;;
*) rm -f "$M"; echo '* Waiting for client to connect... *'; i=0; while [ ! -e "$M" ] && [ $i -lt 30 ]; do sleep 0.01; i=$((i+1)); done ;;
esac
`, dir)
	if err := os.WriteFile(filepath.Join(dir, rdma.WriteBW), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func rdmaJob(rank, size int, addr string, join time.Duration) *JobOptions {
	return &JobOptions{Job: launch.Job{Launcher: launch.FlagsOnly, Rank: rank, Size: size, Rendezvous: addr, Hosts: []string{"node0", "node1", "node2", "node3"}},
		Secret: []byte("0123456789abcdef-secret"), JoinTimeout: join}
}

// Two ranks as goroutines on 127.0.0.1, each planning the HGX fixture's
// rails 0 and 1 at once: rank 0 prints nothing itself but returns the
// job's document (every rail of the pair with both ends, judged), writes
// results.json with both ranks' parts; rank 1 writes its own part under
// rank-1/.
func TestBenchRDMACrossTwoRanks(t *testing.T) {
	root := fakehost.Dir(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	p, err := PlanRDMA(context.Background(), NodeOptions{Root: root, Timeout: time.Minute}, rdma.Options{Mode: rdma.ModeCrossNode, GIDIndex: -1, Rails: []int{0, 1}, Concurrent: true})
	if err != nil {
		t.Fatal(err)
	}
	perf, out, addr := perftestStandIn(t), t.TempDir(), freeport.Addr(t)
	envs := make([]*report.Envelope, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			s := &Session{Host: fmt.Sprintf("node%d", r), Clock: func() time.Time { return time.Unix(0, 0) }}
			plan := *p
			envs[r], _, errs[r] = s.benchRDMACross(context.Background(), s.Now(), &plan, RDMAOptions{PerftestDir: perf, Out: out, Timeout: 20 * time.Second,
				Job: rdmaJob(r, 2, addr, 5*time.Second)})
		})
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
	}
	if !RDMAMember(envs[1]) || RDMAMember(envs[0]) {
		t.Error("members")
	}
	doc := envs[0].Data.(*RDMADoc)
	if len(doc.Pairs) != 2 || len(doc.Job.Ranks) != 2 || len(envs[0].Results) != 4 {
		t.Fatalf("%d pairs, %d ranks, %d results", len(doc.Pairs), len(doc.Job.Ranks), len(envs[0].Results))
	}
	for _, r := range envs[0].Results {
		if r.Status != result.Pass || !strings.Contains(r.Subject, "node0:GPU") || !strings.Contains(r.Subject, "↔node1:GPU") {
			t.Errorf("%s: %s %s", r.Subject, r.Status, r.Message)
		}
	}
	for _, f := range []string{"results.json", "rank-1/results.json", doc.Pairs[1].Outcomes[0].ClientOut, doc.Pairs[1].Outcomes[0].ServerOut} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("not written: %v", err)
		}
	}
	var sb strings.Builder
	if err := rdma.WriteTable(&sb, doc.Pairs, envs[0].Results); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "node1:"+doc.Pairs[0].Entry.Peer.NIC) {
		t.Errorf("table:\n%s", sb.String())
	}
	b, _ := os.ReadFile(filepath.Join(out, "results.json"))
	var env struct {
		Schema string `json:"schema"`
		Job    struct {
			Ranks []struct {
				Rank int `json:"rank"`
			} `json:"ranks"`
		} `json:"job"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Schema != "gdrcheck.bench-rdma/v1" || len(env.Job.Ranks) != 2 {
		t.Errorf("results.json: %v %+v", err, env)
	}
}

// The peer rank never comes: rank 0 names it (and its host) at the join
// deadline, exit 1; no job, or an odd one, is refused.
func TestBenchRDMACrossRefusals(t *testing.T) {
	p := &rdma.Plan{Mode: rdma.ModeCrossNode, Test: rdma.WriteBW, Entries: []rdma.Entry{{NIC: "mlx5_0"}}}
	s := &Session{Host: "node0"}
	start := time.Now()
	_, _, err := s.benchRDMACross(context.Background(), s.Now(), p, RDMAOptions{Out: t.TempDir(), Job: rdmaJob(0, 2, freeport.Addr(t), time.Second)})
	var f *Failure
	if !errors.As(err, &f) || !strings.Contains(err.Error(), "rank 1 (node1): never arrived") || time.Since(start) > 10*time.Second {
		t.Errorf("missing peer: %v after %s", err, time.Since(start))
	}
	var te *ToolError
	for _, tc := range []struct {
		jo   *JobOptions
		want string
	}{
		{nil, "one rank of a job of 2 ranks or more"},
		{rdmaJob(0, 3, "127.0.0.1:1", time.Second), "even number of ranks"},
	} {
		_, _, err := s.benchRDMACross(context.Background(), s.Now(), p, RDMAOptions{Out: t.TempDir(), Job: tc.jo})
		if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v", tc.jo, err)
		}
	}
}

// Four ranks, rank 3 never comes: after the join deadline the job goes on
// without it; pair 0-1 passes, pair 2-3 is PeerMissing naming rank 3 and
// its host, and rank 0 exits 1.
func TestBenchRDMACrossMissingRank(t *testing.T) {
	root := fakehost.Dir(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	p, err := PlanRDMA(context.Background(), NodeOptions{Root: root, Timeout: time.Minute}, rdma.Options{Mode: rdma.ModeCrossNode, GIDIndex: -1, Rails: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	perf, out, addr := perftestStandIn(t), t.TempDir(), freeport.Addr(t)
	envs := make([]*report.Envelope, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	start := time.Now()
	for r := range 3 {
		wg.Go(func() {
			s := &Session{Host: fmt.Sprintf("node%d", r)}
			plan := *p
			envs[r], _, errs[r] = s.benchRDMACross(context.Background(), s.Now(), &plan, RDMAOptions{PerftestDir: perf, Out: out, Timeout: 20 * time.Second,
				Job: rdmaJob(r, 4, addr, time.Second)})
		})
	}
	wg.Wait()
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %s", took)
	}
	var f *Failure
	// Every rank exits 1: the job failed (rank 1's own pair passed, and
	// rank 0 tells it so).
	if !errors.As(errs[0], &f) || !errors.As(errs[2], &f) || !errors.As(errs[1], &f) || !strings.Contains(errs[1].Error(), "rank 3 (node3)") {
		t.Errorf("exits: %v / %v / %v", errs[0], errs[1], errs[2])
	}
	doc := envs[0].Data.(*RDMADoc)
	by := map[string]result.Result{}
	for _, r := range envs[0].Results {
		by[r.Subject] = r
	}
	if len(doc.Pairs) != 2 || len(doc.Job.Failures) != 1 || doc.Job.Failures[0].Rank != 3 {
		t.Fatalf("%d pairs, failures %+v", len(doc.Pairs), doc.Job.Failures)
	}
	for _, pr := range doc.Pairs {
		var want result.Status = result.Pass
		if pr.Entry.Host == "node2" {
			want = result.Fail
			if pr.Cause != rdma.CausePeerMissing || !strings.Contains(pr.Detail, "rank 3 (node3): never arrived") {
				t.Errorf("pair 2-3: %+v", pr)
			}
		}
		for _, r := range envs[0].Results {
			if strings.HasPrefix(r.Subject, pr.Entry.Host+":") && r.Status != want {
				t.Errorf("%s: %s %s", r.Subject, r.Status, r.Message)
			}
		}
	}
}
