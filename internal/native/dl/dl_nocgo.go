//go:build !cgo

package dl

import "fmt"

// OpenTable cannot open anything without cgo.
func OpenTable(s Spec, _ string, _ uintptr, _ Bind, _ string) (*Library, error) {
	return nil, fmt.Errorf("%s: %w", s.What, ErrNoEngine)
}

// Open cannot open anything without cgo.
func Open(s Spec, _ string) (*Library, error) { return nil, fmt.Errorf("%s: %w", s.What, ErrNoEngine) }

// OpenPath cannot open anything without cgo.
func OpenPath(p string) (*Library, error) { return nil, fmt.Errorf("%s: %w", p, ErrNoEngine) }

// Release forgets the table and the handle (there are none without cgo).
func (l *Library) Release() { l.table, l.handle = nil, nil }

// Close is Release.
func (l *Library) Close() error { l.Release(); return nil }
