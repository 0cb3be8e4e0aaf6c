// Package result is the small vocabulary every check and verdict speaks, in
// the manner of node-problem-detector: a status, a machine-matchable Reason,
// a human Message, the Evidence it rests on and a Remedy.
package result

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Status is the outcome of one check on one subject.
type Status string

// Statuses. Skip and Unknown never count as passing.
const (
	Pass    Status = "pass"    // looked, and it is right
	Warn    Status = "warn"    // works, but below what it should be
	Fail    Status = "fail"    // looked, and it is wrong
	Skip    Status = "skip"    // does not apply here (no NIC: no GDR check)
	Unknown Status = "unknown" // could not look (needs root, not captured)
	Error   Status = "error"   // the check itself broke
)

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	switch s {
	case Pass, Warn, Fail, Skip, Unknown, Error:
		return true
	}
	return false
}

// Severity orders statuses for sorting: failures first.
func (s Status) Severity() int {
	switch s {
	case Fail:
		return 0
	case Error:
		return 1
	case Warn:
		return 2
	case Unknown:
		return 3
	case Skip:
		return 4
	case Pass:
		return 5
	}
	return 6
}

// UnmarshalJSON refuses statuses outside the vocabulary.
func (s *Status) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if !Status(v).Valid() {
		return fmt.Errorf("status %q: want pass, warn, fail, skip, unknown or error", v)
	}
	*s = Status(v)
	return nil
}

// Evidence is one fact a result rests on: a file and its value, an NVML
// call and its answer, a log line.
type Evidence struct {
	Source string `json:"source"`         // file path, "nvml:nvmlDeviceGetP2PStatus", "log:12"
	Value  string `json:"value"`          // what it said
	Note   string `json:"note,omitempty"` // how to read it
}

// Result is one check's verdict on one subject.
type Result struct {
	ID string `json:"id"` // stable check id, e.g. gdr.nic-affinity
	// Source names the producer: SourceCheck for a readiness check, a
	// reader's kind ("nvidia-smi-topo", "nccl-log", ...) for a verdict read
	// off a file. An ID means one thing within one source only: the check
	// gdr.nic-affinity and the matrix reader's gdr.nic-affinity judge
	// different inputs.
	Source   string     `json:"source,omitempty"`
	Title    string     `json:"title,omitempty"`
	Status   Status     `json:"status"`
	Subject  string     `json:"subject"` // GPU0, mlx5_0, GPU0-mlx5_0, 0000:16:00.0, node
	Reason   string     `json:"reason"`  // CamelCase, machine-matchable
	Message  string     `json:"message"`
	Evidence []Evidence `json:"evidence,omitempty"`
	Remedy   string     `json:"remedy,omitempty"`
	// FollowsFrom names the finding this result follows from, as "ID
	// subject" of that result (Ref): one cause is one finding, judged and
	// given its remedy once; the results it explains say so here and in
	// their message instead of repeating it. Such a result is a note: Skip
	// (not judged on its own), or the status of what it still judges
	// itself, without the cause's remedy.
	FollowsFrom string `json:"follows_from,omitempty"`
	// DurationMS is the check's run time (the same for every subject of one check).
	DurationMS float64 `json:"duration_ms"`
}

// Ref is how FollowsFrom names r: its ID and subject ("nccl.env
// NCCL_NET_GDR_LEVEL").
func (r Result) Ref() string { return r.ID + " " + r.Subject }

// SourceCheck is the Source of the readiness checks' results.
const SourceCheck = "check"

// SetSource names the producer of every result in rs.
func SetSource(rs []Result, source string) {
	for i := range rs {
		rs[i].Source = source
	}
}

// Counts tallies results by status.
type Counts map[Status]int

// Count tallies a set of results.
func Count(rs []Result) Counts {
	c := Counts{}
	for _, r := range rs {
		c[r.Status]++
	}
	return c
}

// Failed reports whether anything failed (or a check broke).
func (c Counts) Failed() bool { return c[Fail] > 0 || c[Error] > 0 }

// Sort orders results failures first, then by check id and subject.
func Sort(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Status.Severity() != b.Status.Severity() {
			return a.Status.Severity() < b.Status.Severity()
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Subject < b.Subject
	})
}

// Worst is the most severe status of a set (Pass for an empty set is not
// claimed: it returns Skip).
func Worst(rs []Result) Status {
	if len(rs) == 0 {
		return Skip
	}
	w := rs[0].Status
	for _, r := range rs[1:] {
		if r.Status.Severity() < w.Severity() {
			w = r.Status
		}
	}
	return w
}
