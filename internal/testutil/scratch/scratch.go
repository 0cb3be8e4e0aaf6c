// Package scratch places tests' scratch files. Several packages' tests
// must write real trees (directory roots opened with os.Root, snapshot
// archives, run --out folders); on a disk-backed /tmp that costs more
// system time than the tests themselves.
package scratch

import (
	"os"

	"golang.org/x/sys/unix"
)

// OnTmpfs points TMPDIR (so t.TempDir and os.MkdirTemp) at /dev/shm when
// the caller has not chosen a TMPDIR and /dev/shm is a writable tmpfs with
// at least 1 GiB free; otherwise it changes nothing. Call it from TestMain
// before m.Run.
func OnTmpfs() {
	if os.Getenv("TMPDIR") != "" {
		return
	}
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) != nil || st.Type != unix.TMPFS_MAGIC || unix.Access("/dev/shm", unix.W_OK) != nil {
		return
	}
	if uint64(st.Bavail)*uint64(st.Bsize) < 1<<30 {
		return
	}
	os.Setenv("TMPDIR", "/dev/shm")
}
