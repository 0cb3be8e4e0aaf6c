package ncclog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

func TestDetect(t *testing.T) {
	for _, name := range readertest.Samples(t) {
		want := !notLogs[name]
		if got := Detect(readertest.Body(t, name)); got != want {
			t.Errorf("Detect(%s) = %v, want %v", name, got, want)
		}
	}
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"", false},
		{"<system version=\"1\">\n<cpu numaid=\"0\"/>\n</system>\n", false},
		{"host:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n", true},
		{"NCCL INFO without a header\n", false},
		{"[1,0]<stdout>:n1:5:5 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n", true},
		{"#  size count\n" + strings.Repeat("   8  2  float  sum  -1  5.0  0.00  0.00  0\n", 10) + "h:1:1 [0] NCCL INFO x\n", false},
	} {
		if got := Detect([]byte(tt.in)); got != tt.want {
			t.Errorf("Detect(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFindHeaders(t *testing.T) {
	type h struct {
		host     string
		pid, tid int64
		dev      int
		level    byte
		msg      string
	}
	tests := []struct {
		line string
		want []h
	}{
		{"n013:101855:101885 [0] NCCL INFO Using network IB", []h{{"n013", 101855, 101885, 0, 'I', "Using network IB"}}},
		{"[1,14]<stdout>:test-nccl-worker-1:33:33 [6] NCCL INFO NCCL version 2.22.3+cuda12.2",
			[]h{{"test-nccl-worker-1", 33, 33, 6, 'I', "NCCL version 2.22.3+cuda12.2"}}},
		{"12: node:176:4360 [5] NCCL INFO CollNet 05/0 : 5 [receive] via COLLNET/SHARP/5/GDRDMA",
			[]h{{"node", 176, 4360, 5, 'I', "CollNet 05/0 : 5 [receive] via COLLNET/SHARP/5/GDRDMA"}}},
		{"kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion",
			[]h{{"kp-ddp-worker-0", 3468, 3905, 4, 'W', "NET/IB : Got completion"}}},
		{"dgx1:9001:9040 [0] 1023.441201 ncclCommInitRank:1203 NCCL TRACE comm 0x2e51f00 rank 0",
			[]h{{"dgx1", 9001, 9040, 0, 'T', "comm 0x2e51f00 rank 0"}}},
		{"ljm:803564:803604 [1] NCCL INFO comm 0x9497920 rank 1 nranks ljm:803563:803603 [0] NCCL INFO comm 0x8fe0500 rank 0",
			[]h{{"ljm", 803564, 803604, 1, 'I', "comm 0x9497920 rank 1 nranks "}, {"ljm", 803563, 803603, 0, 'I', "comm 0x8fe0500 rank 0"}}},
		{"[0] NCCL INFO no host", []h{{"", 0, 0, 0, 'I', "no host"}}},
		{"the NCCL version is 2.1", nil},
		{"x NCCL INFO", []h{{"", 0, 0, 0, 'I', ""}}},
	}
	for _, tt := range tests {
		hs := findHeaders([]byte(tt.line), nil)
		if len(hs) != len(tt.want) {
			t.Errorf("%q: %d headers, want %d", tt.line, len(hs), len(tt.want))
			continue
		}
		for i, x := range hs {
			end := len(tt.line)
			if i+1 < len(hs) {
				end = hs[i+1].start
			}
			got := h{tt.line[x.hostS:x.hostE], x.pid, x.tid, x.dev, x.level, tt.line[x.msg:end]}
			if got != tt.want[i] {
				t.Errorf("%q header %d = %+v, want %+v", tt.line, i, got, tt.want[i])
			}
		}
	}
}

func TestCleanPrefix(t *testing.T) {
	for _, tt := range []struct {
		p    string
		want bool
	}{
		{"", true}, {"[1,3]<stdout>:", true}, {"12: ", true}, {"[2024-07-19 10:00:01] ", true},
		{"2024-07-19T10:00:01.123Z ", true}, {"    ", true}, {"cudaDev 0", false},
		{"     8388608       2097152     float     sum      ", false}, {"nranks ", false},
	} {
		if got := cleanPrefix([]byte(tt.p)); got != tt.want {
			t.Errorf("cleanPrefix(%q) = %v, want %v", tt.p, got, tt.want)
		}
	}
}

func TestInputErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   io.Reader
		line int
		msg  string
	}{
		{"empty", strings.NewReader(""), 1, "empty input"},
		{"binary", bytes.NewReader([]byte("\x00\x01\x02\nELF\x00\x00\n")), 1, "binary"},
		{"gzip", bytes.NewReader([]byte{0x1f, 0x8b, 8, 0, 0, 0}), 1, "gzip"},
		{"readerr", io.MultiReader(strings.NewReader("h:1:1 [0] NCCL INFO a\nh:1:1 [0] NCCL INFO b\n"), errReader{}), 3, "read: disk on fire"},
	} {
		_, _, err := Analyze(tt.name, tt.in)
		readertest.WantParseError(t, err, tt.name, tt.line, tt.msg)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// TestLongAndOddLines: an overlong line is read in part and the next lines
// are still read; CRLF and NUL bytes in a text log do not stop the reader.
func TestLongAndOddLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("h1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\r\n")
	b.WriteString("h1:1:1 [0] NCCL INFO Trees " + strings.Repeat("[0] -1/-1/-1->0->1 ", MaxLine/16) + "\n")
	b.WriteString("\x00\x00\x00garbage\n")
	b.WriteString("h1:1:1 [0] NCCL INFO Using network IB\r\n")
	r, _, err := Analyze("odd.log", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "long", r.LongLines, int64(1))
	eq(t, "lines", r.Lines, int64(4))
	eq(t, "version", versions(r), "2.21.5+cuda12.4")
	eq(t, "network", strings.Join(host(t, r, "h1").Networks, ""), "IB")
}

// TestNonFiniteNumbers: a bandwidth written "inf", "nan" or past float64's
// range ("1e999") is not a number the report keeps, so the report still
// marshals (the fuzzer found "+Inf" in a system tree's bandwidth).
func TestNonFiniteNumbers(t *testing.T) {
	for _, v := range []string{"inf", "+Inf", "NaN", "1e999", "-1e999"} {
		t.Run(v, func(t *testing.T) {
			log := "h:1:2 [0] NCCL INFO === System : maxBw " + v + " totalBw " + v + " ===\n" +
				"h:1:2 [0] NCCL INFO CPU/0 (1/1/1)\n" +
				"h:1:2 [0] NCCL INFO + PCI[" + v + "] - GPU/1000 (0)\n" +
				"h:1:2 [0] NCCL INFO ==========================================\n" +
				"h:1:2 [0] NCCL INFO GPU/1000 :GPU/1000 (0/5000.0/LOC) NET/0 (3/" + v + "/PHB)\n" +
				"h:1:2 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 1, bw " + v + "/" + v + ", type LOC/PHB, sameChannels 1\n"
			r, vs, err := Analyze("nonfinite.log", strings.NewReader(log))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("report does not marshal: %v", err)
			}
			if _, err := json.Marshal(vs); err != nil {
				t.Errorf("verdicts do not marshal: %v", err)
			}
		})
	}
}
