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

func TestWants(t *testing.T) {
	got := Wants("job", "pass a.b Fine", "unknown c.d NoData host1")
	if len(got) != 2 || got[0] != (Want{ID: "a.b", Status: "pass", Reason: "Fine", Subject: "job"}) ||
		got[1] != (Want{ID: "c.d", Status: "unknown", Reason: "NoData", Subject: "host1"}) {
		t.Errorf("%+v", got)
	}
	for _, bad := range []string{"pass a.b", "good a.b Fine", "pass a.b Fine x y"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%q: no panic", bad)
				}
			}()
			Wants("job", bad)
		}()
	}
}
