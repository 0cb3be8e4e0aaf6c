package pci

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/internal/testutil/memtest"
)

func TestParseAddress(t *testing.T) {
	cases := []struct {
		in   string
		want string
		err  string
	}{
		{"0000:00:06.0", "0000:00:06.0", ""},
		{"00000000:18:00.1", "0000:18:00.1", ""},
		{"18:00.0", "0000:18:00.0", ""},
		{"0004:04:00.0", "0004:04:00.0", ""},
		{"10000:e1:00.0", "10000:e1:00.0", ""},
		{"0000:DB:00.0", "0000:db:00.0", ""},
		{" 0000:00:06.0\n", "0000:00:06.0", ""},
		{"0000:00:20.0", "", "bad device"},
		{"0000:00:06.8", "", "bad function"},
		{"0000:100:06.0", "", "bad bus"},
		{"pci0000:00", "", "want device.function"},
		{"0000:00:06", "", "device.function"},
		{"", "", "want domain"},
	}
	for _, c := range cases {
		a, err := ParseAddress(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseAddress(%q) = %v, %v; want error containing %q", c.in, a, err, c.err)
			}
			continue
		}
		if err != nil || a.String() != c.want {
			t.Errorf("ParseAddress(%q) = %v, %v; want %s", c.in, a, err, c.want)
		}
	}
}

func TestParseLinkSpeed(t *testing.T) {
	cases := []struct {
		in  string
		gts float64
		gen int
		err bool
	}{
		{"32.0 GT/s PCIe", 32, 5, false},
		{"2.5 GT/s PCIe", 2.5, 1, false},
		{"8 GT/s", 8, 3, false},
		{"16.0 GT/s", 16, 4, false},
		{"64.0 GT/s PCIe", 64, 6, false},
		{"Unknown", 0, 0, false},
		{"", 0, 0, false},
		{"fast", 0, 0, true},
		{"-1 GT/s", 0, 0, true},
		{"32 MT/s", 0, 0, true},
		{"nan GT/s", 0, 0, true},
		{"inf GT/s", 0, 0, true},
	}
	for _, c := range cases {
		v, err := ParseLinkSpeed(c.in)
		if (err != nil) != c.err || float64(v) != c.gts || v.Gen() != c.gen {
			t.Errorf("ParseLinkSpeed(%q) = %v (gen %d), %v; want %v gen %d err=%v", c.in, v, v.Gen(), err, c.gts, c.gen, c.err)
		}
	}
}

func TestParseLinkWidth(t *testing.T) {
	cases := []struct {
		in   string
		want int
		err  bool
	}{{"16", 16, false}, {"x8", 8, false}, {"0", 0, false}, {"255", 0, false}, {"", 0, false}, {"sixteen", 0, true}, {"-4", 0, true}}
	for _, c := range cases {
		v, err := ParseLinkWidth(c.in)
		if (err != nil) != c.err || v != c.want {
			t.Errorf("ParseLinkWidth(%q) = %d, %v", c.in, v, err)
		}
	}
}

func TestCPUList(t *testing.T) {
	cases := []struct {
		in, out string
		err     bool
	}{
		{"0-63,128-191", "0-63,128-191", false},
		{"0,2,4,6,8,10", "0,2,4,6,8,10", false},
		{"3,1-2,2", "1-3", false},
		{"", "", false},
		{"7-3", "", true},
		{"a-b", "", true},
		{"0-99999999", "", true},
	}
	for _, c := range cases {
		v, err := ParseCPUList(c.in)
		if (err != nil) != c.err || (err == nil && v.String() != c.out) {
			t.Errorf("ParseCPUList(%q) = %q, %v", c.in, v.String(), err)
		}
	}
	m, err := ParseCPUMask("ffff0000,0000ffff")
	if err != nil || m.String() != "0-15,48-63" {
		t.Errorf("ParseCPUMask = %q, %v", m.String(), err)
	}
	a, _ := ParseCPUList("0-7")
	b, _ := ParseCPUList("7-9")
	c, _ := ParseCPUList("8-9")
	if !a.Intersects(b) || a.Intersects(c) {
		t.Errorf("Intersects wrong")
	}
}

func TestParseHex(t *testing.T) {
	for _, c := range []struct {
		in   string
		bits int
		want uint64
		err  bool
	}{{"0x030200", 32, 0x030200, false}, {"10de", 16, 0x10de, false}, {"0x10000", 16, 0, true}, {"0x", 16, 0, true}, {"zz", 16, 0, true}} {
		v, err := ParseHex(c.in, c.bits)
		if (err != nil) != c.err || v != c.want {
			t.Errorf("ParseHex(%q) = %x, %v", c.in, v, err)
		}
	}
}

func FuzzAttributes(f *testing.F) {
	for _, s := range []string{"0000:00:06.0", "32.0 GT/s PCIe", "16", "0-63,128-191", "ffffffff,00000000", "0x030200", "-1", "Unknown", "x16", "10000:e1:00.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := ParseAddress(s); err == nil {
			b, err := ParseAddress(a.String())
			if err != nil || a != b {
				t.Fatalf("address %q does not round-trip: %v %v", s, a, err)
			}
		}
		_, _ = ParseHex(s, 32)
		_, _ = ParseInt(s)
		if v, err := ParseLinkSpeed(s); err == nil && v < 0 {
			t.Fatalf("negative speed from %q", s)
		}
		if v, err := ParseLinkWidth(s); err == nil && (v < 0 || v > 32) {
			t.Fatalf("width %d from %q", v, s)
		}
		if c, err := ParseCPUList(s); err == nil {
			d, err := ParseCPUList(c.String())
			if err != nil || d.String() != c.String() {
				t.Fatalf("cpu list %q does not round-trip: %q", s, c.String())
			}
		}
		_, _ = ParseCPUMask(s)
		_ = NormalizeBusID(s)
	})
}

// The review's S2: a local_cpulist of one range repeated to fill the 64 KiB
// an attribute may be cost 10 GB, because every range was expanded before
// duplicates were dropped. Ranges are now merged first: a page of
// repeats costs what the one range costs.
func TestCPUListBombBounded(t *testing.T) {
	for _, c := range []struct {
		rng   string
		count int // CPUs in the set; 0: refused
	}{
		{"0-8191", MaxCPUs},    // the most a set may hold, repeated
		{"0-65536", 0},         // the review's reproduction: one range over MaxCPUs
		{"5-5", 1},             // one CPU, repeated
		{"1048575-1048575", 1}, // the highest CPU number
	} {
		bomb := strings.Repeat(c.rng+",", (64<<10)/(len(c.rng)+1))
		bomb = strings.TrimSuffix(bomb, ",")
		var set CPUSet
		var err error
		n := memtest.Allocated(func() { set, err = ParseCPUList(bomb) })
		if c.count == 0 && err == nil || c.count > 0 && (err != nil || len(set) != c.count) {
			t.Errorf("%s repeated: %d CPUs, %v", c.rng, len(set), err)
		}
		// The ranges themselves (16 bytes for every 2 bytes or more of
		// input), the set, and the message.
		if limit := uint64(len(bomb))*8 + MaxCPUs*8 + 4<<10; n > limit {
			t.Errorf("%s repeated (%d bytes): %d bytes allocated, want at most %d", c.rng, len(bomb), n, limit)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("the message quotes the whole value: %d bytes", len(err.Error()))
		}
	}
	// Overlapping ranges in any order add up once.
	set, err := ParseCPUList("4096-8191,0-4096,100-200,8191")
	if err != nil || len(set) != MaxCPUs || set.String() != "0-8191" {
		t.Errorf("overlaps: %q, %v", set.String(), err)
	}
	if _, err := ParseCPUList("0-4095,8192-12288"); err == nil {
		t.Error("8193 CPUs in two ranges accepted")
	}
}

// A mask has the same bound: a page of ffffffff words names 233,000 CPUs.
func TestCPUMaskBounded(t *testing.T) {
	full := strings.TrimSuffix(strings.Repeat("ffffffff,", (64<<10)/9), ",")
	var err error
	n := memtest.Allocated(func() { _, err = ParseCPUMask(full) })
	// The words (16 bytes for every 9 of input) and the set as it grows.
	if limit := uint64(len(full))*8 + MaxCPUs*8*2; err == nil || n > limit {
		t.Errorf("page of ffffffff: %v, %d bytes allocated", err, n)
	}
	// Leading zero words cost nothing and change nothing.
	zeros := strings.Repeat("00000000,", 7000) + "0000ffff"
	if m, err := ParseCPUMask(zeros); err != nil || m.String() != "0-15" {
		t.Errorf("zero words: %q, %v", m.String(), err)
	}
	if _, err := ParseCPUMask("1" + strings.Repeat(",00000000", 1<<15)); err == nil {
		t.Error("CPU 1<<20 accepted")
	}
}

// Every message quotes at most the start of a bad value.
func TestMessagesQuoteBounded(t *testing.T) {
	long := strings.Repeat("\x1b[2J", 16<<10)
	var errs []error
	_, err := ParseAddress(long)
	errs = append(errs, err)
	_, err = ParseHex(long, 32)
	errs = append(errs, err)
	_, err = ParseInt(long)
	errs = append(errs, err)
	_, err = ParseLinkSpeed(long)
	errs = append(errs, err)
	_, err = ParseLinkSpeed(long + " GT/s")
	errs = append(errs, err)
	_, err = ParseLinkWidth(long)
	errs = append(errs, err)
	_, err = ParseCPUList(long)
	errs = append(errs, err)
	_, err = ParseCPUMask(long)
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil || len(err.Error()) > 400 {
			t.Errorf("parser %d: %d bytes: %.100v", i, len(fmt.Sprint(err)), err)
		}
	}
	if q := Quote("héllo" + strings.Repeat("é", 100)); !strings.HasSuffix(q, "... (206 bytes)") || !utf8.ValidString(q) {
		t.Errorf("Quote = %s", q)
	}
}
