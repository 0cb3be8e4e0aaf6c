package level

import (
	"encoding/json"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in    string
		level Level
		links int
		ok    bool
	}{
		{"X", Self, 0, true},
		{" X ", Self, 0, true},
		{"NV18", NVLink, 18, true},
		{"NV1", NVLink, 1, true},
		{"PIX", PIX, 0, true},
		{"PXB", PXB, 0, true},
		{"PHB", PHB, 0, true},
		{"NODE", NODE, 0, true},
		{"SYS", SYS, 0, true},
		{"N/A", Unknown, 0, true},
		{"NV", Unknown, 0, false},
		{"NV0", Unknown, 0, false},
		{"NV018", Unknown, 0, false},
		{"NV+4", Unknown, 0, false},
		{"NVX", Unknown, 0, false},
		{"pix", Unknown, 0, false},
		{"", Unknown, 0, false},
		{"BOGUS", Unknown, 0, false},
	} {
		l, n, err := Parse(c.in)
		if l != c.level || n != c.links || (err == nil) != c.ok {
			t.Errorf("Parse(%q) = %v, %d, %v; want %v, %d, ok %v", c.in, l, n, err, c.level, c.links, c.ok)
		}
	}
}

func TestOrderAndNames(t *testing.T) {
	want := []string{"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "N/A"}
	for i, w := range want {
		if got := Level(i).String(); got != w {
			t.Errorf("Level(%d) = %q, want %q", i, got, w)
		}
	}
	if Level(-1).String() != "Level(-1)" || Level(len(want)).String() != "Level(8)" {
		t.Errorf("out-of-range levels print %q and %q", Level(-1), Level(len(want)))
	}
	if !(Self < NVLink && NVLink < PIX && PIX < PXB && PXB < PHB && PHB < NODE && NODE < SYS && SYS < Unknown) {
		t.Error("levels are not ordered closest first")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for l := Self; l <= Unknown; l++ {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var back Level
		if err := json.Unmarshal(b, &back); err != nil || back != l {
			t.Errorf("%v: %s reads back as %v (%v)", l, b, back, err)
		}
	}
	var l Level
	if err := json.Unmarshal([]byte(`"FAR"`), &l); err == nil {
		t.Error(`"FAR" unmarshals without error`)
	}
}
