package readertest

import "testing"

func TestCorpusBody(t *testing.T) {
	b, ok := CorpusBody([]byte("source: x\nhardware: y\nnotes: z\n---\nbody\n"))
	if !ok || string(b) != "body\n" {
		t.Errorf("%q %v", b, ok)
	}
	if _, ok := CorpusBody([]byte("body only\n")); ok {
		t.Error("no header taken for one")
	}
}
