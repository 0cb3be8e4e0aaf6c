package ncclog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		in      string
		class   byte
		net     string
		dev     int
		gdr, sh bool
	}{
		{"P2P/CUMEM/read", clP2P, "", -1, false, false},
		{"P2P/direct pointer/read", clP2P, "", -1, false, false},
		{"SHM/direct/direct", clSHM, "", -1, false, false},
		{"NET/IB/0/GDRDMA", clNET, "IB", 0, true, false},
		{"NET/IB/1/GDRDMA/Shared", clNET, "IB", 1, true, true},
		{"NET/IB/3(5)/GDRDMA", clNET, "IB", 3, true, false},
		{"NET/IB/0", clNET, "IB", 0, false, false},
		{"NET/Socket/1/Shared", clNET, "Socket", 1, false, true},
		{"NET/AWS Libfabric/7/GDRDMA", clNET, "AWS Libfabric", 7, true, false},
		{"COLLNET/SHARP/5/GDRDMA", clCollNet, "SHARP", 5, true, false},
		{"NVLS", clNVLS, "", -1, false, false},
		{"something", clOther, "", -1, false, false},
	} {
		c := classify(tt.in)
		if c.class != tt.class || c.netName != tt.net || c.netDev != tt.dev || c.gdr != tt.gdr || c.shared != tt.sh {
			t.Errorf("classify(%q) = %+v", tt.in, c)
		}
	}
}

func TestParseEnds(t *testing.T) {
	for _, tt := range []struct {
		in       string
		collnet  bool
		from, to int32
		dir      int8
		ok       bool
	}{
		{"2[c7000] -> 0[87000] [receive]", false, 2, 0, 2, true},
		{"0[0] -> 1[1]", false, 0, 1, 0, true},
		{"7 -> 8 [send]", false, 7, 8, 1, true},
		{"5 [receive]", true, 5, -1, 2, true},
		{"0[0] ->", false, 0, 0, 0, false},
		{"x -> 1", false, 0, 0, 0, false},
		{"1 -> 2 garbage", false, 0, 0, 0, false},
	} {
		f, to, d, ok := parseEnds([]byte(tt.in), tt.collnet)
		if ok != tt.ok || ok && (f != tt.from || to != tt.to || d != tt.dir) {
			t.Errorf("parseEnds(%q) = %d %d %d %v", tt.in, f, to, d, ok)
		}
	}
}

// TestCommResolution: rank numbers are per communicator. A NET channel of a
// per-host communicator joins two ranks of one host even though the same
// rank numbers are on other hosts in the world communicator.
func TestCommResolution(t *testing.T) {
	log := `a:1:10 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 commId 0xw - Init START
a:2:20 [1] NCCL INFO comm 0x2 rank 1 nranks 4 cudaDev 1 busId 2000 commId 0xw - Init START
b:3:30 [0] NCCL INFO comm 0x3 rank 2 nranks 4 cudaDev 0 busId 1000 commId 0xw - Init START
b:4:40 [1] NCCL INFO comm 0x4 rank 3 nranks 4 cudaDev 1 busId 2000 commId 0xw - Init START
b:3:31 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xs - Init START
b:4:41 [1] NCCL INFO comm 0x6 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0xs - Init START
a:2:20 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0/GDRDMA
b:3:31 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA
`
	r, vs, err := Analyze("comm.log", strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	loc := map[string]string{}
	for _, c := range r.Channels.Records {
		loc[c.Host+itoa(c.From)+itoa(c.To)] = c.Locality
	}
	eq(t, "world a 1->2", loc["a12"], "inter-node")
	eq(t, "sub b 0->1", loc["b01"], "intra-node")
	for _, x := range vs {
		if x.ID == "nccl.p2p" && (x.Status != result.Fail || x.Reason != "IntraNodeOverNet") {
			t.Errorf("nccl.p2p = %s %s: %s", x.Status, x.Reason, x.Message)
		}
	}
}

// TestUntrackedConnections: past the cap on distinct connections, lines are
// still judged (locality from what is known) and offenders still named.
func TestUntrackedConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("generates ~30 MB")
	}
	var b bytes.Buffer
	b.WriteString("a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x1 - Init START\n")
	b.WriteString("b:2:2 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0x1 - Init START\n")
	n := maxConns + 1000
	for i := 0; i < n; i++ {
		// distinct peers make distinct connections; odd ranks are on host b
		peer := 2*i + 1
		b.WriteString("a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> ")
		b.WriteString(itoa(peer))
		b.WriteString("[0] [send] via NET/IB/0/GDRDMA\n")
	}
	b.WriteString("a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n")
	r, vs, err := Analyze("many.log", &b)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "tracked", r.Channels.Connections, maxConns)
	eq(t, "untracked", r.Channels.ConnectionsUntracked, int64(1001))
	eq(t, "lines", r.Channels.TransportLines, int64(n+1))
	eq(t, "records", len(r.Channels.Records), maxRecords)
	for _, x := range vs {
		if x.ID == "nccl.gdr" {
			if x.Status != result.Fail || len(x.Evidence) == 0 || !strings.Contains(x.Evidence[0].Value, "via NET/IB/0") {
				t.Errorf("nccl.gdr = %s %s %+v", x.Status, x.Reason, x.Evidence)
			}
		}
	}
}

// TestInvariants: the counts of a report add up, for every sample.
func TestInvariants(t *testing.T) {
	for _, name := range readertest.Samples(t) {
		r, vs := reader.Sample(t, name)
		checkInvariants(t, name, r, vs)
	}
}

func checkInvariants(t testing.TB, name string, r *Report, vs []result.Result) {
	t.Helper()
	var sum, intra, inter, unknown int64
	for _, x := range r.Channels.ByTransport {
		sum += x.Lines
		intra += x.Intra
		inter += x.Inter
		unknown += x.Unknown
		if x.Lines != x.Intra+x.Inter+x.Unknown {
			t.Errorf("%s: %s lines %d != %d+%d+%d", name, x.Transport, x.Lines, x.Intra, x.Inter, x.Unknown)
		}
	}
	if sum+r.Channels.GarbledLines != r.Channels.TransportLines {
		t.Errorf("%s: transport lines %d != %d judged + %d garbled", name, r.Channels.TransportLines, sum, r.Channels.GarbledLines)
	}
	if intra != r.Channels.IntraNode || inter != r.Channels.InterNode || unknown != r.Channels.UnknownLocality {
		t.Errorf("%s: locality totals do not add up", name)
	}
	if r.SplicedLines > r.Lines || r.LongLines > r.Lines || r.Channels.TransportLines > r.NCCLLines {
		t.Errorf("%s: line counts do not add up: %d lines, %d spliced, %d long, %d NCCL, %d transport",
			name, r.Lines, r.SplicedLines, r.LongLines, r.NCCLLines, r.Channels.TransportLines)
	}
	if r.NCCLLines > 0 && r.SplicedLines == 0 && r.NCCLLines > r.Lines {
		t.Errorf("%s: %d NCCL messages in %d unspliced lines", name, r.NCCLLines, r.Lines)
	}
	for _, x := range vs {
		for _, e := range x.Evidence {
			var n int64
			if _, err := fmt.Sscan(strings.TrimPrefix(e.Source, name+":"), &n); err != nil || n < 1 || n > r.Lines {
				t.Errorf("%s: %s evidence source %q is not a line of the input", name, x.ID, e.Source)
			}
		}
	}
	ids := map[string]bool{}
	for _, x := range vs {
		if !x.Status.Valid() || x.ID == "" || x.Reason == "" || x.Subject == "" || x.Message == "" {
			t.Errorf("%s: incomplete verdict %+v", name, x)
		}
		ids[x.ID] = true
	}
	for _, id := range []string{"nccl.gdr", "nccl.p2p", "nccl.net", "nccl.version", "nccl.errors", "nccl.channels", "nccl.topology"} {
		if !ids[id] {
			t.Errorf("%s: no %s verdict", name, id)
		}
	}
}
