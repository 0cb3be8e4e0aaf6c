package ncclog

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze/textio"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

var reader = readertest.Reader[*Report]{Detect: Detect, Analyze: Analyze, RawJSON: true, Undetected: notLogs}

// notLogs are nccl-tests outputs with at most one NCCL line: not detected
// as logs, yet read as such when forced.
var notLogs = map[string]bool{"aws-p5-2node-allreduce-srun.txt": true, "aws-p5-eks-allreduce-mpirun-tagged.txt": true, "gcp-a3high-tcpx-allgather-2node.txt": true}

// sampleBody is a sample of testdata without its source header.
func sampleBody(t testing.TB, name string) []byte {
	return readertest.Sample(t, filepath.Join("testdata", name))
}

func analyzeSample(t testing.TB, name string) *Report {
	t.Helper()
	r, _ := reader.Sample(t, name)
	return r
}

// TestGolden keeps the whole report (JSON, with the verdicts) and the text
// summary of every sample; the verdicts are asserted one by one in
// TestVerdicts.
func TestGolden(t *testing.T) { reader.GoldenSamples(t, *update, nil) }

const (
	pass = result.Pass
	warn = result.Warn
	fail = result.Fail
	skip = result.Skip
	unk  = result.Unknown
)

func v(id string, st result.Status, reason string) readertest.Want {
	return readertest.Want{ID: id, Status: st, Reason: reason, Subject: "job"}
}

func vs(id string, st result.Status, reason, subject string) readertest.Want {
	return readertest.Want{ID: id, Status: st, Reason: reason, Subject: subject}
}

// wantVerdicts is what a person reading each log concludes. Every verdict
// a sample gets must be listed here, and nothing else.
var wantVerdicts = map[string][]readertest.Want{
	// Four ranks of one process on one host talk through the NIC
	// (loopback) although they share the machine; GDRDMA is on.
	"a100-intranode-ranks-via-net-ib-gdrdma-excerpt.txt": {
		v("nccl.gdr", pass, "GDRDMA"), v("nccl.p2p", fail, "IntraNodeOverNet"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", unk, "NoVersionLine"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", unk, "NoChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	// nccl-tests table interleaved with INFO lines; two GPUs of mew0 over
	// P2P; nothing on the network.
	"a100pcie-2gpu-allreduce-interleaved-nccl-info.txt": {
		v("nccl.gdr", skip, "NoInterNodeTraffic"), v("nccl.p2p", pass, "P2P"), v("nccl.net", unk, "NoNetworkLines"),
		v("nccl.version", unk, "NoVersionLine"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", unk, "NoChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	// Only n013 logged; its channels use GDRDMA (forced to SYS level),
	// n014 (rank 1, from the nccl-tests header) printed nothing: its side
	// (where the reporter found GDR off) is not in the log.
	"a100pcie-2node-gdr-level-sys-mixed-roce-ib-gather-dropoff.txt": {
		v("nccl.gdr", warn, "PartialLog"), v("nccl.p2p", skip, "NoIntraNodePeers"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), vs("nccl.topology", pass, "TopologyConsistent", "n013"),
	},
	// The topology file claims NVL[20] one way and NVL[240] the other: 2
	// channels instead of 24.
	"a100pcie-nvbridge-degraded-topo-2ch.txt": {
		v("nccl.gdr", skip, "NoInterNodeTraffic"), v("nccl.p2p", pass, "P2P"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", warn, "LowChannelCount"), vs("nccl.topology", fail, "NVLinkDegraded", "mew0"),
	},
	// Healthy single node: 24 channels over the NVLink bridge; GDR off on
	// the HCAs does not matter for one host.
	"a100pcie-nvbridge-roce-gdr-disabled-24ch.txt": {
		v("nccl.gdr", skip, "NoInterNodeTraffic"), v("nccl.p2p", pass, "P2P"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), vs("nccl.topology", pass, "TopologyConsistent", "mew0"),
	},
	"aws-p5-2node-allreduce-srun.txt":        allUnknown("NoNCCLDebugLines"),
	"aws-p5-eks-allreduce-mpirun-tagged.txt": allUnknown("NoNCCLDebugLines"),
	// Good two-node EFA run: every inter-node channel NET/AWS Libfabric/n/GDRDMA,
	// every intra-node one P2P/CUMEM.
	"aws-p5-2node-efa-ofi-gdrdma-full.txt": {
		v("nccl.gdr", pass, "GDRDMA"), v("nccl.p2p", pass, "P2P"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	// An nccl-tests output with a single NCCL INFO line: nothing to judge.
	"gcp-a3high-tcpx-allgather-2node.txt": {
		v("nccl.gdr", unk, "NoChannelLines"), v("nccl.p2p", unk, "NoChannelLines"), v("nccl.net", unk, "NoNetworkLines"),
		v("nccl.version", unk, "NoVersionLine"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", unk, "NoChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	// VM with emulated switches: PCI[0.2] uplinks; the two channel lines
	// use GDRDMA.
	"h200-kvm-vm-topo-system-pci0.2-emulated-switch-gdrdma-excerpt.txt": {
		v("nccl.gdr", pass, "GDRDMA"), v("nccl.p2p", skip, "NoIntraNodePeers"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", unk, "NoVersionLine"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", unk, "NoChannelCount"), vs("nccl.topology", warn, "EmulatedPCIBridge", "node_2"),
	},
	// One rank, socket fallback on a VM without RDMA: GDR does not apply.
	"h200x1-vm-single-rank-socket-fallback-all-subsys.txt": {
		v("nccl.gdr", skip, "NoInterNodeTraffic"), v("nccl.p2p", skip, "SingleRank"), v("nccl.net", skip, "SocketSingleHost"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), vs("nccl.topology", pass, "TopologyConsistent", "vm"),
	},
	// 16-rank RoCE job: both HCAs report GDR Disabled.
	"roce-2hca-gdr-disabled-peermem-loaded-excerpt.txt": {
		v("nccl.gdr", fail, "GDRDisabledForHCA"), v("nccl.p2p", unk, "NoChannelLines"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", unk, "NoVersionLine"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", unk, "NoChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	// Garbled two-GPU workstation: SHM between the GPUs, sockets only.
	"workstation-2gpu-no-ib-socket-shm-garbled.txt": {
		v("nccl.gdr", skip, "NoInterNodeTraffic"), v("nccl.p2p", warn, "SHMFallback"), v("nccl.net", skip, "SocketSingleHost"),
		v("nccl.version", unk, "NoVersionLine"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	"synthetic-2node-ib-no-gdr.txt": {
		v("nccl.gdr", fail, "NoGDRDMA"), v("nccl.p2p", pass, "P2P"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	"synthetic-2node-init-only.txt": {
		v("nccl.gdr", unk, "NoChannelLines"), v("nccl.p2p", unk, "NoChannelLines"), v("nccl.net", unk, "NoNetworkLines"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", unk, "NoChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	"synthetic-2node-socket-fallback.txt": {
		v("nccl.gdr", fail, "NoGDRDMA"), v("nccl.p2p", skip, "NoIntraNodePeers"), v("nccl.net", fail, "SocketFallback"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	"synthetic-errors-ib-completion.txt": {
		v("nccl.gdr", pass, "GDRDMA"), v("nccl.p2p", skip, "NoIntraNodePeers"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", fail, "NCCLErrors"),
		v("nccl.channels", unk, "NoChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	"synthetic-nccl24-ring-srun-trace.txt": {
		v("nccl.gdr", pass, "GDRDMA"), v("nccl.p2p", pass, "P2P"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	"synthetic-network-mismatch.txt": {
		v("nccl.gdr", unk, "NoChannelLines"), v("nccl.p2p", unk, "NoChannelLines"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", fail, "NetworkMismatch"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", unk, "NoChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	"synthetic-nvswitch-one-gpu-degraded.txt": {
		v("nccl.gdr", skip, "NoInterNodeTraffic"), v("nccl.p2p", pass, "P2P"), v("nccl.net", skip, "NoNetwork"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), vs("nccl.topology", fail, "NVLinkDegraded", "hgx1"),
	},
	"synthetic-pxn-collnet-subcomm.txt": {
		v("nccl.gdr", pass, "GDRDMA"), v("nccl.p2p", pass, "P2P"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", pass, "SameVersion"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
	"synthetic-version-mismatch.txt": {
		v("nccl.gdr", pass, "GDRDMA"), v("nccl.p2p", skip, "NoIntraNodePeers"), v("nccl.net", pass, "RDMANetwork"),
		v("nccl.version", fail, "VersionMismatch"), v("nccl.errors", pass, "NoErrors"),
		v("nccl.channels", pass, "ChannelCount"), v("nccl.topology", unk, "NoSystemTree"),
	},
}

func allUnknown(reason string) []readertest.Want {
	var out []readertest.Want
	for _, id := range []string{"nccl.gdr", "nccl.p2p", "nccl.net", "nccl.version", "nccl.errors", "nccl.channels", "nccl.topology"} {
		out = append(out, v(id, unk, reason))
	}
	return out
}

func TestVerdicts(t *testing.T) {
	for _, name := range readertest.Samples(t) {
		t.Run(name, func(t *testing.T) {
			want, ok := wantVerdicts[name]
			if !ok {
				t.Fatalf("no expected verdicts for %s: add them to wantVerdicts", name)
			}
			_, vs := reader.Sample(t, name)
			readertest.ExactVerdicts(t, vs, want, func(x result.Result) bool { return x.Reason == "NCCLWarnings" })
			for _, x := range vs {
				for _, e := range x.Evidence {
					if !strings.HasPrefix(e.Source, name+":") || e.Value == "" {
						t.Errorf("%s: evidence %+v does not point at a line of %s", x.ID, e, name)
					}
				}
			}
		})
	}
}

// TestEvidenceLines checks that evidence line numbers point at the line
// that says it (after the header is stripped).
func TestEvidenceLines(t *testing.T) {
	for _, name := range readertest.Samples(t) {
		body := sampleBody(t, name)
		lines := strings.Split(string(body), "\n")
		_, vs := reader.Sample(t, name)
		for _, x := range vs {
			for _, e := range x.Evidence {
				var n int
				if _, err := fmt.Sscan(strings.TrimPrefix(e.Source, name+":"), &n); err != nil || n < 1 || n > len(lines) {
					t.Errorf("%s %s: bad source %q", name, x.ID, e.Source)
					continue
				}
				line := lines[n-1]
				val := strings.TrimSuffix(e.Value, "...")
				if !strings.Contains(line, val) && !strings.Contains(strings.Join(strings.Fields(line), " "), strings.Join(strings.Fields(val), " ")) {
					t.Errorf("%s %s: line %d %q does not contain evidence %q", name, x.ID, n, line, e.Value)
				}
			}
		}
	}
}

// TestExtraction asserts the facts a reader of each sample must get right.
func TestExtraction(t *testing.T) {
	tests := []struct {
		file  string
		check func(t *testing.T, r *Report)
	}{
		{"a100pcie-2node-gdr-level-sys-mixed-roce-ib-gather-dropoff.txt", func(t *testing.T, r *Report) {
			eq(t, "version", versions(r), "2.16.5+cuda11.8")
			eq(t, "hosts", hostNames(r), "n013 n014")
			h := host(t, r, "n014")
			if !h.Silent || len(h.Ranks) != 1 || h.Ranks[0] != 1 {
				t.Errorf("n014 = %+v, want silent with rank 1", h)
			}
			eq(t, "ib devices", ibDevs(host(t, r, "n013")), "0:mlx5_0:1/RoCE 1:mlx5_2:1/IB")
			eq(t, "gdr level", r.GDR.Level, "SYS")
			if !r.GDR.DMABuf {
				t.Error("DMA-BUF is available on GPU device 0: want dmabuf")
			}
			g := r.GDR.GPUs[0]
			if g.GPU != "81000" || g.HCA != 1 || !g.Enabled || g.Distance != 6 || g.Limit != 7 {
				t.Errorf("first GPU GDR line = %+v", g)
			}
			eq(t, "inter-node lines", r.Channels.InterNode, int64(6))
			eq(t, "shared", transportLines(r, "NET/IB/1/GDRDMA/Shared"), int64(2))
			eq(t, "paths", len(r.Topology[0].GPUNetPaths), 2)
			eq(t, "path to NET/1", r.Topology[0].GPUNetPaths[0].Net+" "+r.Topology[0].GPUNetPaths[0].Type, "NET/1 PHB")
		}},
		{"aws-p5-2node-efa-ofi-gdrdma-full.txt", func(t *testing.T, r *Report) {
			eq(t, "hosts", hostNames(r), "test-nccl-worker-0 test-nccl-worker-1")
			eq(t, "ranks of worker-1", intRanges(host(t, r, "test-nccl-worker-1").Ranks), "8-15")
			eq(t, "provider", r.Network.OFIProvider, "efa")
			eq(t, "nics", r.Network.OFINICs, 32)
			eq(t, "libfabric", r.Network.Libfabric, "1.21")
			eq(t, "plugin", r.Network.PluginVersions[0].Version+" x"+itoa(r.Network.PluginVersions[0].Processes), "aws-ofi-nccl 1.9.2-aws x16")
			eq(t, "intra", r.Channels.IntraNode, int64(448))
			eq(t, "inter", r.Channels.InterNode, int64(512))
			eq(t, "unknown", r.Channels.UnknownLocality, int64(0))
			eq(t, "nvls", r.Channels.Counts[0].NVLS, 16)
			if env(r, "NCCL_TOPO_FILE") == "" || !strings.HasSuffix(env(r, "NCCL_TOPO_FILE"), "p5.48xl-topo.xml") {
				t.Errorf("NCCL_TOPO_FILE = %q", env(r, "NCCL_TOPO_FILE"))
			}
			initRanks := 0
			for _, rk := range r.Ranks {
				if rk.Source == "init" {
					initRanks++
					if rk.NRanks != 16 || rk.CommID != "0x6ac5d7c3b5ae2f0c" && rk.CommID == "" {
						t.Errorf("rank %+v", rk)
					}
				}
			}
			eq(t, "init ranks", initRanks, 16)
		}},
		{"workstation-2gpu-no-ib-socket-shm-garbled.txt", func(t *testing.T, r *Report) {
			eq(t, "hosts", hostNames(r), "ljm")
			eq(t, "spliced", r.SplicedLines, int64(2))
			h := host(t, r, "ljm")
			eq(t, "ranks", intRanges(h.Ranks), "0-1")
			eq(t, "processes", h.Processes, 2)
			if !h.NoIBDevice {
				t.Error("NET/IB : No device found: want no_ib_device")
			}
			eq(t, "socket", strings.Join(h.SocketIfaces, " "), "bond0:192.168.3.21<0>")
			eq(t, "gpus", strings.Join(h.GPUs, " "), "3000 2000")
		}},
		{"a100pcie-nvbridge-roce-gdr-disabled-24ch.txt", func(t *testing.T, r *Report) {
			eq(t, "coll", r.Channels.Counts[0].Coll, 24)
			eq(t, "p2p lines", transportLines(r, "P2P/direct pointer/read"), int64(48))
			eq(t, "hcas", len(r.GDR.HCAs), 3)
			eq(t, "vnic", r.GDR.HCAs[2].Name, "mlx5_0+mlx5_1")
			eq(t, "ib", ibDevs(host(t, r, "mew0")), "0:mlx5_0:1/RoCE 1:mlx5_1:1/RoCE")
			eq(t, "oob", host(t, r, "mew0").IBOOB, "eno8303:192.168.0.3<0>")
			eq(t, "nnodes", r.Comms[0].NNodes, 1)
		}},
		{"a100pcie-nvbridge-degraded-topo-2ch.txt", func(t *testing.T, r *Report) {
			p := r.Channels.Patterns[0]
			if p.Pattern != 4 || p.Name != "ring" || p.NChannels != 1 || p.BWIntra != 20 || p.TypeIntra != "NVL" || p.TypeInter != "PIX" {
				t.Errorf("pattern = %+v", p)
			}
			eq(t, "finding", r.Topology[0].Findings[0].Kind, "nvlink-asymmetric")
			eq(t, "topo file", env(r, "NCCL_TOPO_FILE"), "/home/zx/nccl-tests/topo_fail.xml")
		}},
		{"h200-kvm-vm-topo-system-pci0.2-emulated-switch-gdrdma-excerpt.txt", func(t *testing.T, r *Report) {
			tr := r.Topology[0]
			if tr.GPUs != 8 || tr.NICs != 8 || tr.NVLinks != 8 || len(tr.Findings) != 8 {
				t.Errorf("tree = %d GPUs %d NICs %d NVLinks %d findings", tr.GPUs, tr.NICs, tr.NVLinks, len(tr.Findings))
			}
			if tr.MaxBW != 48 || tr.TotalBW != 370.8 || !tr.Complete {
				t.Errorf("tree header = %v %v %v", tr.MaxBW, tr.TotalBW, tr.Complete)
			}
			eq(t, "hosts", hostNames(r), "node_2 node1")
		}},
		{"h200x1-vm-single-rank-socket-fallback-all-subsys.txt", func(t *testing.T, r *Report) {
			eq(t, "version", versions(r), "2.28.9+cuda13.0")
			eq(t, "ranks", len(r.Ranks), 1)
			eq(t, "bus", r.Ranks[0].BusID, "60")
			eq(t, "network", strings.Join(host(t, r, "vm").Networks, " "), "Socket")
			eq(t, "hca", r.GDR.HCAs[0].Plugin+" "+r.GDR.HCAs[0].Name, "Socket eth0")
			eq(t, "dump file", env(r, "NCCL_TOPO_DUMP_FILE"), "/root/out/nccl_topo.xml")
			eq(t, "coll", r.Channels.Counts[0].Coll, 64)
			eq(t, "ring lines", r.Channels.RingLines, int64(64))
			eq(t, "ring total", r.Channels.MaxRingChannels, 64)
		}},
		{"roce-2hca-gdr-disabled-peermem-loaded-excerpt.txt", func(t *testing.T, r *Report) {
			if !r.Network.NonDevicePlugin {
				t.Error("Using non-device net plugin version 0: want non_device_plugin")
			}
			rk := r.Ranks[0]
			if rk.NRanks != 16 || rk.BusID != "1c000" || rk.CommID != "0x65e0bd6ee7449db4" || rk.PID != 25668 {
				t.Errorf("rank = %+v", rk)
			}
			eq(t, "oob", host(t, r, "hostname1").IBOOB, "primaryip:10.10.10.10<0>")
		}},
		{"a100-intranode-ranks-via-net-ib-gdrdma-excerpt.txt", func(t *testing.T, r *Report) {
			eq(t, "ranks", intRanges(host(t, r, "10-90-43-152").Ranks), "0-3")
			eq(t, "intra", r.Channels.IntraNode, int64(12))
			for _, rk := range r.Ranks {
				if rk.Source != "channel" || rk.Host != "10-90-43-152" {
					t.Errorf("rank %+v", rk)
				}
			}
		}},
		{"synthetic-nccl24-ring-srun-trace.txt", func(t *testing.T, r *Report) {
			eq(t, "hosts", hostNames(r), "dgx1 dgx2")
			eq(t, "version", versions(r), "2.4.8+cuda10.1")
			eq(t, "inter", r.Channels.InterNode, int64(4))
			eq(t, "intra", r.Channels.IntraNode, int64(2))
			var trace *Rank
			for i := range r.Ranks {
				if r.Ranks[i].Rank == 0 {
					trace = &r.Ranks[i]
				}
			}
			if trace == nil || trace.BusID != "6000" {
				t.Errorf("rank 0 from the TRACE line = %+v", trace)
			}
		}},
		{"synthetic-errors-ib-completion.txt", func(t *testing.T, r *Report) {
			eq(t, "errors", r.ErrorCount, int64(7))
			eq(t, "warnings", r.WarningCount, int64(1))
			eq(t, "distinct", len(r.Errors), 6)
			eq(t, "completion x2", r.Errors[0].Count, int64(2))
		}},
		{"synthetic-pxn-collnet-subcomm.txt", func(t *testing.T, r *Report) {
			eq(t, "collnet", r.Channels.CollNetLines, int64(3))
			eq(t, "comms", len(r.Comms), 2)
			eq(t, "sub nranks", r.Comms[1].NRanks, 2)
			eq(t, "sub hosts", r.Comms[1].Hosts, 1)
			found := false
			for _, c := range r.Channels.Records {
				if c.Transport == "NET/IB/1(2)/GDRDMA/Shared" {
					found = true
					if c.NetDev != 1 || !c.GDRDMA || !c.Shared || c.Locality != "inter-node" {
						t.Errorf("PXN record %+v", c)
					}
				}
			}
			if !found {
				t.Error("no PXN record")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) { tt.check(t, analyzeSample(t, tt.file)) })
	}
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func versions(r *Report) string {
	var p []string
	for _, v := range r.Versions {
		p = append(p, v.Version)
	}
	return strings.Join(p, " ")
}

func hostNames(r *Report) string {
	var p []string
	for _, h := range r.Hosts {
		p = append(p, h.Name)
	}
	return strings.Join(p, " ")
}

func host(t *testing.T, r *Report, name string) Host {
	t.Helper()
	for _, h := range r.Hosts {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("no host %s in %s", name, hostNames(r))
	return Host{}
}

func ibDevs(h Host) string {
	var p []string
	for _, d := range h.IBDevices {
		p = append(p, itoa(d.Index)+":"+d.Name+":"+itoa(d.Port)+"/"+d.LinkLayer)
	}
	return strings.Join(p, " ")
}

func transportLines(r *Report, tr string) int64 {
	for _, t := range r.Channels.ByTransport {
		if t.Transport == tr {
			return t.Lines
		}
	}
	return -1
}

func env(r *Report, name string) string {
	for _, e := range r.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func TestDetect(t *testing.T) {
	for _, name := range readertest.Samples(t) {
		want := !notLogs[name]
		if got := Detect(sampleBody(t, name)); got != want {
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
		if x.ID == "nccl.p2p" && (x.Status != fail || x.Reason != "IntraNodeOverNet") {
			t.Errorf("nccl.p2p = %s %s: %s", x.Status, x.Reason, x.Message)
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
		var pe *textio.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want a ParseError", tt.name, err)
			continue
		}
		if pe.Name != tt.name || pe.Line != tt.line || !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("%s: %v, want line %d and %q", tt.name, err, tt.line, tt.msg)
		}
		if !strings.HasPrefix(err.Error(), tt.name+":") {
			t.Errorf("%s: error %q does not name the file", tt.name, err)
		}
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
			if x.Status != fail || len(x.Evidence) == 0 || !strings.Contains(x.Evidence[0].Value, "via NET/IB/0") {
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
