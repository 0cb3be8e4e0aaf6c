package dossier

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrNotListed is a file the dossier's SHA256SUMS does not name: the
// manifest is not this file's.
var ErrNotListed = errors.New("not listed")

// CheckSum checks content, read from the dossier's file name, against
// sums, the dossier's SHA256SUMS: nil when the manifest names the file
// with content's digest. A manifest present means a dossier whole
// (WriteDir writes it last); a file that does not match it was edited
// after the run, or written by another run.
func CheckSum(sums []byte, name string, content []byte) error {
	got := sha256.Sum256(content)
	for line := range bytes.Lines(sums) {
		digest, file, ok := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte("  "))
		if !ok || string(file) != name {
			continue
		}
		if string(digest) != hex.EncodeToString(got[:]) {
			return fmt.Errorf("%s does not match %s (its digest differs): edited after the run, or written by another run", name, Sums)
		}
		return nil
	}
	return fmt.Errorf("%s: %w in %s", name, ErrNotListed, Sums)
}
