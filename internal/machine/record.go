package machine

import (
	"sort"
	"sync"
)

type noteKind int

const (
	noteEntry noteKind = iota // looked at (lstat, readlink, listed)
	noteFile                  // contents read
	noteDir                   // listed
)

// Recorder collects the root-relative paths a Root touched and the output
// of the commands it ran. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	paths map[string]noteKind
	cmds  map[string]CommandOutput
}

// CommandOutput is what a live command returned.
type CommandOutput struct {
	Command Command
	Output  []byte
	Err     error
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{paths: map[string]noteKind{}, cmds: map[string]CommandOutput{}}
}

func (r *Recorder) note(rel string, k noteKind) {
	if r == nil || rel == "" {
		return
	}
	r.mu.Lock()
	if old, ok := r.paths[rel]; !ok || k > old {
		r.paths[rel] = k
	}
	r.mu.Unlock()
}

func (r *Recorder) noteCommand(c Command, out []byte, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.cmds[c.Key] = CommandOutput{Command: c, Output: append([]byte(nil), out...), Err: err}
	r.mu.Unlock()
}

// Entry is one recorded path.
type Entry struct {
	Path string
	// Read is true when the contents were read; a path that was only
	// looked at (listed in a directory, lstat'ed on the way) needs to exist
	// in a snapshot but not to carry its contents.
	Read bool
}

// Entries lists every recorded path, sorted (parents before children).
func (r *Recorder) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Entry, 0, len(r.paths))
	for p, k := range r.paths {
		out = append(out, Entry{Path: p, Read: k != noteEntry})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Commands lists the recorded command outputs by key.
func (r *Recorder) Commands() []CommandOutput {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.cmds))
	for k := range r.cmds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]CommandOutput, 0, len(keys))
	for _, k := range keys {
		out = append(out, r.cmds[k])
	}
	return out
}
