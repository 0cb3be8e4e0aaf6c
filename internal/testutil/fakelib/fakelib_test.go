package fakelib

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCached: builders racing for one key (as test binaries of several
// packages do) all get the one complete folder; a later call builds
// nothing; a failed build leaves nothing behind; a different key is
// another folder.
func TestCached(t *testing.T) {
	root := t.TempDir()
	var builds atomic.Int32
	build := func(dir string) error {
		builds.Add(1)
		time.Sleep(20 * time.Millisecond) // overlap the racers
		return os.WriteFile(filepath.Join(dir, "lib.so"), []byte("whole"), 0o644)
	}
	const racers = 8
	dirs := make([]string, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			d, err := cached(root, "k1", build)
			if err != nil {
				t.Error(err)
			}
			dirs[i] = d
		})
	}
	wg.Wait()
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "lib.so")); d != filepath.Join(root, "k1") || string(b) != "whole" {
			t.Errorf("racer got %q: %q, %v", d, b, err)
		}
	}
	n := builds.Load()
	if d, err := cached(root, "k1", build); err != nil || d != filepath.Join(root, "k1") || builds.Load() != n {
		t.Errorf("a cached folder was built again: %q, %v, %d builds after %d", d, err, builds.Load(), n)
	}
	if _, err := cached(root, "k2", func(string) error { return errors.New("gcc failed") }); err == nil {
		t.Error("a failed build gave a folder")
	}
	left, _ := os.ReadDir(root)
	if len(left) != 1 || left[0].Name() != "k1" {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("the cache holds %q, want only k1 (no temporary or failed folders)", names)
	}
}

// TestKey: the key changes with the compiler and with every library's
// source.
func TestKey(t *testing.T) {
	base := key("/usr/bin/gcc", []byte("gcc 12"))
	if key("/usr/bin/gcc", []byte("gcc 12")) != base {
		t.Fatal("key is not stable")
	}
	if key("/usr/bin/gcc", []byte("gcc 13")) == base || key("/opt/gcc", []byte("gcc 12")) == base {
		t.Error("the key ignores the compiler")
	}
	old := libs[1].src
	libs[1].src += "\n"
	defer func() { libs[1].src = old }()
	if key("/usr/bin/gcc", []byte("gcc 12")) == base {
		t.Error("the key ignores a library's source")
	}
}
