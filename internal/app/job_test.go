package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/rendezvous"
	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
)

// testPart is a job's part as runJob sees any: JSON with the member "rank".
type testPart struct {
	Rank   int    `json:"rank"`
	Failed string `json:"failed,omitempty"`
}

// runJob gathers every rank's part at rank 0 and names each rank that did
// not finish: one whose part names another rank, one whose part says it
// failed, one that ended before it delivered.
func TestRunJob(t *testing.T) {
	const size = 3
	cases := []struct {
		name  string
		part  func(r int) (testPart, error)
		parts []int          // ranks whose part rank 0 holds
		fails map[int]string // rank: a word of its failure's reason
		lost  bool           // the gathering ends with a *rendezvous.JobError
	}{
		{"every rank delivers", func(r int) (testPart, error) { return testPart{Rank: r}, nil }, []int{0, 1, 2}, nil, false},
		{"a part names another rank", func(r int) (testPart, error) {
			if r == 1 {
				return testPart{Rank: 7}, nil
			}
			return testPart{Rank: r}, nil
		}, []int{0, 2}, map[int]string{1: "its result names rank 7"}, false},
		{"a part says its rank failed", func(r int) (testPart, error) {
			if r == 2 {
				return testPart{Rank: r, Failed: "out of memory"}, nil
			}
			return testPart{Rank: r}, nil
		}, []int{0, 1, 2}, map[int]string{2: "out of memory"}, false},
		{"a rank ends before it delivers", func(r int) (testPart, error) {
			if r == 1 {
				return testPart{}, errors.New("no GPU")
			}
			return testPart{Rank: r}, nil
		}, []int{0, 2}, map[int]string{1: "connection lost"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeport.Addr(t)
			ends := make([]jobEnd[testPart], size)
			errs := make([]error, size)
			var wg sync.WaitGroup
			for r := range size {
				wg.Go(func() {
					ends[r], errs[r] = runJob(context.Background(), jobSpec[testPart]{
						Config: rendezvous.Config{Addr: addr, Rank: r, Size: size, Host: fmt.Sprintf("host%d", r), Secret: []byte("0123456789abcdef-job-secret"),
							JoinTimeout: 5 * time.Second},
						ID: make([]byte, rendezvous.IDSize), Gather: 5 * time.Second,
						Run: func(context.Context, rendezvous.Peer, []byte) (testPart, error) { return tc.part(r) },
						Failed: func(p testPart) (string, string) {
							return fmt.Sprintf("host%d", p.Rank), p.Failed
						},
					})
				})
			}
			wg.Wait()
			if errs[0] != nil {
				t.Fatalf("rank 0: %v", errs[0])
			}
			end := ends[0]
			var held []int
			for r, p := range end.Parts {
				if p != nil {
					if p.Rank != r {
						t.Errorf("part %d names rank %d", r, p.Rank)
					}
					held = append(held, r)
				}
			}
			if fmt.Sprint(held) != fmt.Sprint(tc.parts) {
				t.Errorf("parts of ranks %v, want %v", held, tc.parts)
			}
			if len(end.Failures) != len(tc.fails) {
				t.Errorf("failures %v, want %d", end.Failures, len(tc.fails))
			}
			for _, f := range end.Failures {
				if w, ok := tc.fails[f.Rank]; !ok || !strings.Contains(f.Reason, w) || f.Host != fmt.Sprintf("host%d", f.Rank) {
					t.Errorf("failure %+v, want rank %d's to say %q", f, f.Rank, w)
				}
			}
			var je *rendezvous.JobError
			if errors.As(end.Err, &je) != tc.lost || !tc.lost && end.Err != nil {
				t.Errorf("the gathering's error: %v", end.Err)
			}
			for r := 1; r < size; r++ {
				if ends[r].Parts != nil || ends[r].Failures != nil {
					t.Errorf("rank %d holds what rank 0 gathered: %+v", r, ends[r])
				}
			}
		})
	}
}

// Rank 0 says which connections the rendezvous turned away though the job
// formed: a stranger with the wrong secret is not kept quiet (the
// review's R17: nothing was said).
func TestRunJobSaysTurnedAway(t *testing.T) {
	addr := freeport.Addr(t)
	cfg := func(r int, secret string) rendezvous.Config {
		return rendezvous.Config{Addr: addr, Rank: r, Size: 2, Host: fmt.Sprintf("host%d", r), Secret: []byte(secret), JoinTimeout: 5 * time.Second}
	}
	var warn strings.Builder
	var wg sync.WaitGroup
	var rank0Err error
	wg.Go(func() {
		_, rank0Err = runJob(context.Background(), jobSpec[testPart]{Config: cfg(0, "0123456789abcdef-job-secret"), ID: make([]byte, rendezvous.IDSize),
			Gather: 5 * time.Second, Warn: &warn, Run: func(context.Context, rendezvous.Peer, []byte) (testPart, error) { return testPart{Rank: 0}, nil }})
	})
	// A stranger first: refused, it retries until its own deadline.
	stranger := cfg(1, "not-the-job-secret-0123456789")
	stranger.JoinTimeout = 500 * time.Millisecond
	if _, _, err := rendezvous.Join(context.Background(), stranger); err == nil {
		t.Fatal("a wrong secret joined")
	}
	_, err := runJob(context.Background(), jobSpec[testPart]{Config: cfg(1, "0123456789abcdef-job-secret"), ID: make([]byte, rendezvous.IDSize),
		Gather: 5 * time.Second, Run: func(context.Context, rendezvous.Peer, []byte) (testPart, error) { return testPart{Rank: 1}, nil }})
	wg.Wait()
	if err != nil || rank0Err != nil {
		t.Fatalf("the job: %v, %v", err, rank0Err)
	}
	if !strings.HasPrefix(warn.String(), "gdrcheck: rendezvous: rank 0 turned away") || !strings.Contains(warn.String(), "had the wrong secret (from 127.0.0.1)") {
		t.Errorf("rank 0 said %q", warn.String())
	}
}
