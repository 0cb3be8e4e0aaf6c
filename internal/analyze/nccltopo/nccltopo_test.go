package nccltopo

import (
	"bytes"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

var reader = readertest.Reader[*Report]{Detect: Detect, Analyze: Analyze, RawJSON: true}

// TestGolden keeps the whole report (JSON, with the verdicts) and the text
// summary of every sample; the verdicts are asserted one by one in
// TestVerdicts.
func TestGolden(t *testing.T) { reader.GoldenSamples(t, *update, nil) }

// wantVerdicts is what a person reading each file concludes; every verdict
// a file gets must be listed.
var wantVerdicts = map[string][]readertest.Want{
	// Real dump: both CX-6 Dx ports gdr="0", GPUs and NIC directly on the
	// CPU (PHB), NVLink bridge x12 both ways.
	"a100pcie-nvbridge-cx6dx-dump.txt": readertest.Wants("system",
		"fail nccl.topo.gdr GDRUnsupported", "warn nccl.topo.nic-affinity GDRPathTooFar",
		"pass nccl.topo.nvlink NVLinkConsistent", "pass nccl.topo.pcie PCIeLinksOK",
	),
	"a100pcie-nvbridge-cx6dx-vnic.txt": readertest.Wants("system",
		"fail nccl.topo.gdr GDRUnsupported", "warn nccl.topo.nic-affinity GDRPathTooFar",
		"pass nccl.topo.nvlink NVLinkConsistent", "pass nccl.topo.pcie PCIeLinksOK",
	),
	// Graph of a PCIe-only VM: GPUs meet only through the CPU (SYS).
	"azure-ncv4-a100pcie-graph.txt": readertest.Wants("graphs",
		"warn nccl.graph.intra IntraThroughCPU", "skip nccl.graph.inter NoNetInGraph",
		"pass nccl.graph.channels ChannelsConsistent",
	),
	// Self-targeted NVLinks, socket-only NIC, no link info (VM).
	"azure-ncv4-a100pcie-topo.txt": readertest.Wants("system",
		"skip nccl.topo.gdr NoRDMANIC", "skip nccl.topo.nic-affinity NoRDMANIC",
		"warn nccl.topo.nvlink BogusNVLink", "unknown nccl.topo.pcie NoLinkInfo",
	),
	// One IB VF for eight GPUs on the CPUs: PHB for four, SYS for four.
	"azure-ndv2-v100-topo.txt": readertest.Wants("system",
		"skip nccl.topo.gdr NoNetElements", "warn nccl.topo.nic-affinity GDRPathTooFar",
		"skip nccl.topo.nvlink NoNVLink", "pass nccl.topo.pcie PCIeLinksOK",
	),
	// Synthetic bridges pair 2 GPUs with 2 NICs: PIX everywhere.
	"azure-ndv4-a100-topo.txt": readertest.Wants("system",
		"skip nccl.topo.gdr NoNetElements", "pass nccl.topo.nic-affinity NICNearGPU",
		"skip nccl.topo.nvlink NoNVLink", "pass nccl.topo.pcie PCIeLinksOK",
	),
	// Flat VM PCI: NICs on host bridges, GPUs on the CPU: PHB.
	"b200-vm-gvisor-flat-pci.txt": readertest.Wants("system",
		"pass nccl.topo.gdr GDRCapable", "warn nccl.topo.nic-affinity GDRPathTooFar",
		"pass nccl.topo.nvlink NVLinkConsistent", "pass nccl.topo.pcie PCIeLinksOK",
	),
	"crusoe-b300-vm-cloud-hypervisor-topo.txt": readertest.Wants("system",
		"skip nccl.topo.gdr NoNetElements", "pass nccl.topo.nic-affinity NICNearGPU",
		"skip nccl.topo.nvlink NoNVLink", "pass nccl.topo.pcie PCIeLinksOK",
	),
	// User-truncated VM dump: PHB, H200 and CX-7 at 16 GT/s.
	// Pastes (issue 13 item 6): fences skipped, a dump cut inside a GPU.
	"awsofi466-g5-12xlarge-cpu-pci-only-fenced.txt": readertest.Wants("system",
		"skip nccl.topo.gdr NoNetElements", "skip nccl.topo.nic-affinity NoGPU",
		"skip nccl.topo.nvlink NoNVLink", "skip nccl.topo.pcie NoDevices"),
	"nccl1125-topo-dump-xml-fence-cut-mid-gpu-excerpt.txt": readertest.Wants("system",
		"warn nccl.topo.file Truncated",
		"skip nccl.topo.gdr NoNetElements", "skip nccl.topo.nic-affinity NoRDMANIC",
		"unknown nccl.topo.nvlink CutOff", "pass nccl.topo.pcie PCIeLinksOK"),
	"rccl1185-topo-fenced-amd-gpu-cut-excerpt.txt": readertest.Wants("system",
		"warn nccl.topo.file Truncated",
		"skip nccl.topo.gdr NoNetElements", "skip nccl.topo.nic-affinity NoRDMANIC",
		"skip nccl.topo.nvlink NoNVLink", "pass nccl.topo.pcie PCIeLinksOK"),
	"h200-kvm-vm-topo-dump-fragment.txt": readertest.Wants("system",
		"warn nccl.topo.file Truncated",
		"pass nccl.topo.gdr GDRCapable", "warn nccl.topo.nic-affinity GDRPathTooFar",
		"pass nccl.topo.nvlink NVLinkConsistent", "warn nccl.topo.pcie SlowPCIeLink",
	),
	"h200x1-vm-topo-dump.txt": readertest.Wants("system",
		"skip nccl.topo.gdr NoRDMANIC", "skip nccl.topo.nic-affinity NoRDMANIC",
		"skip nccl.topo.nvlink NoNVLink", "unknown nccl.topo.pcie NoLinkInfo",
	),
	"synthetic-a100pcie-topo-fail-count1.txt": readertest.Wants("system",
		"fail nccl.topo.gdr GDRUnsupported", "warn nccl.topo.nic-affinity GDRPathTooFar",
		"fail nccl.topo.nvlink NVLinkDegraded", "pass nccl.topo.pcie PCIeLinksOK",
	),
	"synthetic-graph-2node.txt": readertest.Wants("graphs",
		"pass nccl.graph.intra IntraDirect", "warn nccl.graph.inter InterThroughCPU",
		"warn nccl.graph.channels InconsistentChannels",
	),
	"synthetic-hgx-switches-degraded.txt": readertest.Wants("system",
		"fail nccl.topo.gdr GDRUnsupported", "pass nccl.topo.nic-affinity NICNearGPU",
		"fail nccl.topo.nvlink NVLinkDegraded", "warn nccl.topo.pcie SlowPCIeLink",
	),
	"synthetic-truncated-mid-tag.txt": readertest.Wants("system",
		"warn nccl.topo.file Truncated",
		"skip nccl.topo.gdr NoNetElements", "pass nccl.topo.nic-affinity NICNearGPU",
		"skip nccl.topo.nvlink NoNVLink", "pass nccl.topo.pcie PCIeLinksOK",
	),
	"synthetic-vm-emulated-bridge-x1.txt": readertest.Wants("system",
		"pass nccl.topo.gdr GDRCapable", "pass nccl.topo.nic-affinity NICNearGPU",
		"pass nccl.topo.nvlink NVLinkConsistent", "warn nccl.topo.pcie SlowPCIeBridge",
	),
}

func TestVerdicts(t *testing.T) {
	reader.ExactSamples(t, wantVerdicts, func(x result.Result) bool { return x.ID == "nccl.topo.file" }, nil)
}

// TestEvidenceLines: evidence points at the line of the element it quotes.
func TestEvidenceLines(t *testing.T) {
	reader.EvidenceLines(t, func(line, value string) bool {
		// the quoted element's first attribute value is on that line
		val := value
		if i := strings.IndexByte(val, '"'); i >= 0 {
			if j := strings.IndexByte(val[i+1:], '"'); j >= 0 {
				val = val[i+1 : i+1+j]
			}
		} else {
			val = strings.TrimPrefix(val, "GPU ")
		}
		return strings.Contains(strings.ToLower(line), strings.ToLower(val))
	})
}

func TestExtraction(t *testing.T) {
	reader.Cases(t, []readertest.Case[*Report]{
		{File: "a100pcie-nvbridge-cx6dx-dump.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			s := r.System
			eq(t, "kind", r.Kind, "system")
			eq(t, "version", r.Version, "1")
			eq(t, "host hash", s.CPUs[0].HostHash, "0xd3524fac75ffbc89")
			eq(t, "gpus", len(s.GPUs), 2)
			g := s.GPUs[0]
			eq(t, "gpu0", fmt.Sprintf("%s dev %d sm %d %s %g x%d", g.BusID, *g.Dev, *g.SM, g.VendorDevice, g.LinkSpeedGTs, *g.LinkWidth), "0000:17:00.0 dev 0 sm 80 10de:20b5 16 x16")
			eq(t, "nvlink", fmt.Sprintf("%s x%d", g.NVLinks[0].Target, *g.NVLinks[0].Count), "0000:65:00.0 x12")
			n := s.NICs[0]
			eq(t, "nets", len(n.Nets), 2)
			eq(t, "net1", fmt.Sprintf("%s port %d speed %d gdr %v", n.Nets[1].Name, *n.Nets[1].Port, *n.Nets[1].Speed, *n.Nets[1].GDR), "mlx5_1 port 2 speed 100000 gdr false")
			eq(t, "path", s.Paths[0].Type, "PHB")
		}},
		{File: "azure-ndv4-a100-topo.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			s := r.System
			eq(t, "cpus", len(s.CPUs), 4)
			eq(t, "gpus", len(s.GPUs), 8)
			eq(t, "nics", len(s.NICs), 8)
			eq(t, "speed as written", s.CPUs[0].PCI[0].LinkSpeed, "16 GT/s")
			eq(t, "speed", s.CPUs[0].PCI[0].LinkSpeedGTs, 16.0)
			eq(t, "source", s.GPUs[0].Source, "pci-class")
			eq(t, "gpu0 path", strings.Join(s.GPUs[0].Path, ">"), "ffff:ff:01.0")
			eq(t, "gpu0 nics", strings.Join(s.Paths[0].NICs, " "), "0103:00:00.0 0104:00:00.0")
		}},
		{File: "crusoe-b300-vm-cloud-hypervisor-topo.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			eq(t, "comments", r.Comments, 24)
			eq(t, "gpu 7 nic", r.System.Paths[7].GPU+" "+r.System.Paths[7].Type+" "+r.System.Paths[7].NICs[0], "0003:00:04.0 PIX 0003:00:0c.0")
			eq(t, "speed", r.System.GPUs[0].LinkSpeedGTs, 64.0)
		}},
		{File: "h200-kvm-vm-topo-dump-fragment.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			if !r.Truncated || !strings.Contains(r.Problem, "<system> <cpu> not closed") || !strings.HasPrefix(r.Problem, "h200-kvm-vm-topo-dump-fragment.txt:") {
				t.Errorf("truncated %v, problem %q", r.Truncated, r.Problem)
			}
			eq(t, "numaid", *r.System.CPUs[0].NUMAID, -1)
			eq(t, "gpus", len(r.System.GPUs), 1)
			eq(t, "net", r.System.NICs[0].Nets[0].Name, "mlx5_0")
		}},
		{File: "synthetic-truncated-mid-tag.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			if !r.Truncated || !strings.Contains(r.Problem, "<nic> not closed") {
				t.Errorf("problem %q", r.Problem)
			}
			eq(t, "nic rdma by class", r.System.NICs[0].RDMA, true)
			eq(t, "nets", len(r.System.NICs[0].Nets), 0)
			eq(t, "path", r.System.Paths[0].Type, "PIX")
		}},
		{File: "synthetic-vm-emulated-bridge-x1.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			g := r.System.GPUs[0]
			eq(t, "odd names", fmt.Sprintf("%s %s %g x%d", g.BusID, g.VendorDevice, g.LinkSpeedGTs, *g.LinkWidth), "0000:68:00.0 10de:2335 32 x16")
			eq(t, "unquoted", *r.System.GPUs[1].LinkWidth, 16)
			eq(t, "comments", r.Comments, 1)
		}},
		{File: "synthetic-hgx-switches-degraded.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			var types []string
			for _, p := range r.System.Paths {
				types = append(types, p.Type)
			}
			eq(t, "paths", strings.Join(types, " "), "PIX PIX PXB PIX")
			eq(t, "comments", r.Comments, 1)
		}},
		{File: "azure-ncv4-a100pcie-graph.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			eq(t, "graphs", len(r.Graphs), 3)
			g := r.Graphs[1]
			eq(t, "graph 1", fmt.Sprintf("%d %s %d %g %s %s", g.Pattern, g.PatternName, g.NChannels, g.SpeedIntra, g.TypeIntra, g.TypeInter), "1 balanced tree 4 12 SYS PIX")
			eq(t, "channel", fmt.Sprint(g.Channels[1].Devices), "[{gpu 1} {gpu 0} {gpu 3} {gpu 2}]")
		}},
		{File: "synthetic-graph-2node.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			eq(t, "channel", fmt.Sprint(r.Graphs[0].Channels[0].Devices), "[{net 0} {gpu 0} {gpu 1} {net 0}]")
		}},
	})
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestDetect(t *testing.T) {
	for _, name := range readertest.Samples(t) {
		if !Detect(readertest.Body(t, name)) {
			t.Errorf("Detect(%s) = false", name)
		}
	}
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"", false},
		{"\xef\xbb\xbf<?xml version=\"1.0\"?>\n<!-- c -->\n<!DOCTYPE x>\n<system version=\"1\">", true},
		{"<graph id=\"0\">", true},
		{"<systems>", false},
		{"<html><body>", false},
		{"host:1:1 [0] NCCL INFO <system version=\"1\">", false},
		{"<!-- never closed", false},
		{"  \n\t<system>", true},
	} {
		if got := Detect([]byte(tt.in)); got != tt.want {
			t.Errorf("Detect(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestInputErrors(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"empty.xml", "", 1, "empty input"},
		{"blank.xml", "\n\n  \n", 4, "no <system> or <graphs>"},
		{"html.xml", "<html>\n<body/></html>", 1, "root element <html>"},
		{"text.xml", "hello\nworld\n", 3, "no <system> or <graphs>"},
		{"binary.xml", "\x00\x01<\x02", 1, "not XML"},
	} {
		_, _, err := Analyze(tt.name, strings.NewReader(tt.in))
		readertest.WantParseError(t, err, tt.name, tt.line, tt.msg)
	}
}

// TestTruncationEverywhere cuts a real dump at every byte: the reader never
// fails once the root is read, reports the cut, and what it returns is a
// prefix of the full file's GPUs.
func TestTruncationEverywhere(t *testing.T) {
	body := readertest.Body(t, "a100pcie-nvbridge-cx6dx-dump.txt")
	full := reader.Report(t, "a100pcie-nvbridge-cx6dx-dump.txt")
	root := bytes.Index(body, []byte(">")) + 1
	for n := root; n < len(body); n++ {
		r, _, err := Analyze("cut.xml", bytes.NewReader(body[:n]))
		if err != nil {
			t.Fatalf("cut at %d: %v", n, err)
		}
		if strings.TrimSpace(string(body[n:])) != "" && !r.Truncated {
			t.Fatalf("cut at %d: not reported as truncated", n)
		}
		if r.Truncated && !strings.HasPrefix(r.Problem, "cut.xml:") {
			t.Fatalf("cut at %d: problem %q does not name the file and line", n, r.Problem)
		}
		for i, g := range r.System.GPUs {
			if g.BusID != full.System.GPUs[i].BusID {
				t.Fatalf("cut at %d: GPU %d is %s, want %s", n, i, g.BusID, full.System.GPUs[i].BusID)
			}
		}
	}
}

func TestLeadingFloat(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
	}{
		{"16.0 GT/s PCIe", 16}, {"16 GT/s", 16}, {"2.5 GT/s", 2.5}, {"", 0}, {"Unknown", 0}, {" 32.0GT/s", 32},
	} {
		if got, _ := leadingFloat(tt.in); got != tt.want {
			t.Errorf("leadingFloat(%q) = %g, want %g", tt.in, got, tt.want)
		}
	}
}

func TestPathType(t *testing.T) {
	byBus := map[string]*PCI{"sw": {BusID: "sw", Class: "0x060400"}, "hb": {BusID: "hb", Class: "0x060000"}}
	for _, tt := range []struct {
		g, n GPU
		want string
	}{
		{GPU{CPU: 0, Path: []string{"sw"}}, GPU{CPU: 0, Path: []string{"sw"}}, "PIX"},
		{GPU{CPU: 0, Path: []string{"sw", "sub"}}, GPU{CPU: 0, Path: []string{"sw"}}, "PXB"},
		{GPU{CPU: 0, Path: []string{"sw"}}, GPU{CPU: 0, Path: []string{"other"}}, "PHB"},
		{GPU{CPU: 0, Path: []string{"hb"}}, GPU{CPU: 0, Path: []string{"hb"}}, "PHB"},
		{GPU{CPU: 0}, GPU{CPU: 0}, "PHB"},
		{GPU{CPU: 0, Path: []string{"sw"}}, GPU{CPU: 1, Path: []string{"sw"}}, "SYS"},
	} {
		n := NIC{CPU: tt.n.CPU, Path: tt.n.Path}
		if got := pathType(tt.g, n, byBus); got.String() != tt.want {
			t.Errorf("pathType(%v, %v) = %s, want %s", tt.g.Path, n.Path, got, tt.want)
		}
	}
}

// TestSocketNICsAreNotRDMA is item 7 of issue 13: NCCL's socket transport
// writes guid = the device index and port 0, so a second Ethernet NIC
// (dev 1, guid 0x1) is as much a socket NIC as eth0 (guid 0x0). The real
// Azure NCv4 file gets a second socket net beside its eth0; an InfiniBand
// port keeps counting as RDMA.
func TestSocketNICsAreNotRDMA(t *testing.T) {
	body := string(readertest.Body(t, "azure-ncv4-a100pcie-topo.txt"))
	eth0 := `<net name="eth0" dev="0" speed="100000" port="0" latency="0.000000" guid="0x0" maxconn="65536" gdr="0"/>`
	if !strings.Contains(body, eth0) {
		t.Fatal("the sample's eth0 line changed")
	}
	for _, c := range []struct {
		name, net string
		rdma      bool
	}{
		{"socket eth1", `<net name="eth1" dev="1" speed="100000" port="0" latency="0.000000" guid="0x1" maxconn="65536" gdr="0"/>`, false},
		{"socket ens3", `<net name="ens3" dev="3" speed="25000" port="0" latency="0.000000" guid="0x3" maxconn="65536" gdr="0"/>`, false},
		{"IB port", `<net name="mlx5_1" dev="1" speed="200000" port="1" latency="0.000000" guid="0x1" maxconn="131072" gdr="1"/>`, true},
	} {
		in := strings.Replace(body, eth0, eth0+"\n      "+c.net, 1)
		rep, vs, err := reader.Analyze("x.xml", strings.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var nets []Net
		for _, n := range rep.System.NICs {
			nets = append(nets, n.Nets...)
		}
		rdma := 0
		for _, n := range nets {
			if n.RDMA {
				rdma++
			}
		}
		if want := map[bool]int{false: 0, true: 1}[c.rdma]; rdma != want {
			t.Errorf("%s: %d RDMA nets, want %d (%+v)", c.name, rdma, want, nets)
		}
		if !c.rdma && len(readertest.Missing(vs, []string{"skip nccl.topo.gdr NoRDMANIC system", "skip nccl.topo.nic-affinity NoRDMANIC system"})) > 0 {
			t.Errorf("%s: %v", c.name, readertest.Verdicts(vs))
		}
	}
}
