package ncclog

import (
	"flag"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

var reader = readertest.Reader[*Report]{Detect: Detect, Analyze: Analyze, RawJSON: true, Undetected: notLogs}

// notLogs are nccl-tests outputs with at most one NCCL line: not detected
// as logs, yet read as such when forced.
var notLogs = map[string]bool{"aws-p5-2node-allreduce-srun.txt": true, "aws-p5-eks-allreduce-mpirun-tagged.txt": true, "gcp-a3high-tcpx-allgather-2node.txt": true,
	"nccltests82-ibverbs-probe-warn-socket-broadcast-excerpt.txt": true}

// TestGolden keeps the whole report (JSON, with the verdicts) and the text
// summary of every sample; the verdicts are asserted one by one in
// TestVerdicts.
func TestGolden(t *testing.T) { reader.GoldenSamples(t, *update, nil) }

// wantVerdicts is what a person reading each log concludes. Every verdict
// a sample gets must be listed here, and nothing else.
var wantVerdicts = map[string][]readertest.Want{
	// Issue 26 class 2: hangs and timeouts are errors. A framework
	// watchdog's collective timeout fails nccl.errors, with or without
	// NCCL debug lines; so does "Connection closed by localRank".
	"nccl1609-h800-shm-nvls-watchdog-allgather-timeout-excerpt.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "warn nccl.p2p SHMFallback", "unknown nccl.net NoNetworkLines", "unknown nccl.version NoVersionLine", "fail nccl.errors CollectiveTimeout", "pass nccl.channels ChannelCount", "pass nccl.nvls NVLSInUse", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"llamafactory6269-watchdog-reduce-scatter-timeout-rank-tags-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoNCCLDebugLines", "unknown nccl.p2p NoNCCLDebugLines", "unknown nccl.net NoNCCLDebugLines", "unknown nccl.version NoNCCLDebugLines", "fail nccl.errors CollectiveTimeout", "unknown nccl.channels NoNCCLDebugLines", "unknown nccl.nvls NoNCCLDebugLines", "unknown nccl.diag NoNCCLDebugLines", "unknown nccl.topology NoNCCLDebugLines"),
	"mlcommons770-connection-closed-by-localrank-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "unknown nccl.net NoNetworkLines", "unknown nccl.version NoVersionLine", "fail nccl.errors NCCLErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	// Issue 26 class 4: facts in the log are used. IB completions say
	// the network is IB; processes that chose different networks are a
	// mismatch without any version line; a one-rank communicator skips
	// the path verdicts (this one already did: kept as a regression).
	"nccl928-ib-completion-errors-only-5node-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "pass nccl.net RDMANetwork", "unknown nccl.version NoVersionLine", "fail nccl.errors NCCLErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"nccltests188-socket-vs-ib-processes-no-version-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "warn nccl.net SocketSelected", "fail nccl.version NetworkMismatch", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"nccl1038-single-rank-nranks1-roce-excerpt.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "skip nccl.p2p SingleRank", "pass nccl.net RDMANetwork", "pass nccl.version SameVersion", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	// Issue 26 class 3: a probe's WARN (no libibverbs) is a warning;
	// NCCL fell back and the test ran.
	"nccltests82-ibverbs-probe-warn-socket-broadcast-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "unknown nccl.net NoNetworkLines", "pass nccl.version SameVersion", "warn nccl.errors NCCLWarnings", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	// Issue 26 class 1: NCCL <= 2.7 named SHM "direct shared memory";
	// "Could not enable P2P between dev X and dev Y" names two GPUs of
	// one host without P2P.
	"nccl622-direct-shared-memory-old-wording-rows-glued-excerpt.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "warn nccl.p2p SHMFallback", "unknown nccl.net NoNetworkLines", "unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"nccl833-could-not-enable-p2p-lab-4gpu-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "warn nccl.p2p P2PNotEnabled", "unknown nccl.net NoNetworkLines", "unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"awsk8stester464-harness-indent-mpirun-tags-socket-excerpt.txt": readertest.Wants("job",
		"fail nccl.gdr NoGDRDMA", "skip nccl.p2p NoIntraNodePeers", "fail nccl.net SocketFallback", "unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors", "pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"opennmt1606-gcp-pod-ring-via-net-socket-old-trees-excerpt.txt": readertest.Wants("job",
		"fail nccl.gdr NoGDRDMA", "skip nccl.p2p NoIntraNodePeers", "fail nccl.net SocketFallback", "unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	// A logger prefix no shape lists (issue 26 class 7): Ray's worker
	// prefix, learned from the input; NCCL's host:pid:tid stays.
	"vllm2442-ray-worker-prefix-v100-tp4-p2p-ipc-excerpt.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "pass nccl.p2p P2P", "unknown nccl.net NoNetworkLines", "unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	// Pastes (issue 13 item 6): launcher prefixes, prompts, fences and
	// the pre-2.5 "Ring NN : a[b] -> c[d] via P2P/IPC" wording.
	"nccl300-mpirun-tagged-nccl256-lo-socket-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "unknown nccl.net NoNetworkLines", "pass nccl.version SameVersion", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"nccl147-ring-via-p2p-ipc-spliced-old-nccl-excerpt.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "pass nccl.p2p P2P", "unknown nccl.net NoNetworkLines", "unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"nccltests29-4node-ring00-via-p2p-ipc-excerpt.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "pass nccl.p2p P2P", "unknown nccl.net NoNetworkLines", "unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"nccl302-rank-bracket-prefix-nccl256-ib-roce-mixed-excerpt.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "pass nccl.p2p P2P", "unknown nccl.net NoNetworkLines", "unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"nvpeermem56-nccl247-two-nodes-ib-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "unknown nccl.net NoNetworkLines", "pass nccl.version SameVersion", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"nccl1737-root-prompt-torchrun-gdr-level0-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "unknown nccl.net NoNetworkLines", "pass nccl.version SameVersion", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	"deit28-conda-prompt-roce-mlx4-excerpt.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "pass nccl.net RDMANetwork", "unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors", "unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree"),
	// Four ranks of one process on one host talk through the NIC
	// (loopback) although they share the machine; GDRDMA is on.
	"a100-intranode-ranks-via-net-ib-gdrdma-excerpt.txt": readertest.Wants("job",
		"pass nccl.gdr GDRDMA", "fail nccl.p2p IntraNodeOverNet", "pass nccl.net RDMANetwork",
		"unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors",
		"unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	// nccl-tests table interleaved with INFO lines; two GPUs of mew0 over
	// P2P; nothing on the network.
	"a100pcie-2gpu-allreduce-interleaved-nccl-info.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "pass nccl.p2p P2P", "unknown nccl.net NoNetworkLines",
		"unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors",
		"unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	// Only n013 logged; its channels use GDRDMA (forced to SYS level),
	// n014 (rank 1, from the nccl-tests header) printed nothing: its side
	// (where the reporter found GDR off) is not in the log.
	"a100pcie-2node-gdr-level-sys-mixed-roce-ib-gather-dropoff.txt": readertest.Wants("job",
		"warn nccl.gdr PartialLog", "skip nccl.p2p NoIntraNodePeers", "pass nccl.net RDMANetwork",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "pass nccl.topology TopologyConsistent n013",
	),
	// The topology file claims NVL[20] one way and NVL[240] the other: 2
	// channels instead of 24.
	"a100pcie-nvbridge-degraded-topo-2ch.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "pass nccl.p2p P2P", "pass nccl.net RDMANetwork",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"warn nccl.channels LowChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "fail nccl.topology NVLinkDegraded mew0",
	),
	// Healthy single node: 24 channels over the NVLink bridge; GDR off on
	// the HCAs does not matter for one host.
	"a100pcie-nvbridge-roce-gdr-disabled-24ch.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "pass nccl.p2p P2P", "pass nccl.net RDMANetwork",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "pass nccl.topology TopologyConsistent mew0",
	),
	"aws-p5-2node-allreduce-srun.txt":        allUnknown("NoNCCLDebugLines"),
	"aws-p5-eks-allreduce-mpirun-tagged.txt": allUnknown("NoNCCLDebugLines"),
	// Good two-node EFA run: every inter-node channel NET/AWS Libfabric/n/GDRDMA,
	// every intra-node one P2P/CUMEM.
	"aws-p5-2node-efa-ofi-gdrdma-full.txt": readertest.Wants("job",
		"pass nccl.gdr GDRDMA", "pass nccl.p2p P2P", "pass nccl.net RDMANetwork",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "pass nccl.nvls NVLSInUse", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	// An nccl-tests output with a single NCCL INFO line: nothing to judge.
	"gcp-a3high-tcpx-allgather-2node.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "unknown nccl.net NoNetworkLines",
		"unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors",
		"unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	// VM with emulated switches: PCI[0.2] uplinks; the two channel lines
	// use GDRDMA.
	"h200-kvm-vm-topo-system-pci0.2-emulated-switch-gdrdma-excerpt.txt": readertest.Wants("job",
		"pass nccl.gdr GDRDMA", "skip nccl.p2p NoIntraNodePeers", "pass nccl.net RDMANetwork",
		"unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors",
		"unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "warn nccl.topology EmulatedPCIBridge node_2",
	),
	// One rank, socket fallback on a VM without RDMA: GDR does not apply.
	"h200x1-vm-single-rank-socket-fallback-all-subsys.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "skip nccl.p2p SingleRank", "skip nccl.net SocketSingleHost",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "pass nccl.topology TopologyConsistent vm",
	),
	// 16-rank RoCE job: both HCAs report GDR Disabled.
	"roce-2hca-gdr-disabled-peermem-loaded-excerpt.txt": readertest.Wants("job",
		"fail nccl.gdr GDRDisabledForHCA", "unknown nccl.p2p NoChannelLines", "pass nccl.net RDMANetwork",
		"unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors",
		"unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	// Garbled two-GPU workstation: SHM between the GPUs, sockets only.
	"workstation-2gpu-no-ib-socket-shm-garbled.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "warn nccl.p2p SHMFallback", "skip nccl.net SocketSingleHost",
		"unknown nccl.version NoVersionLine", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	"synthetic-2node-ib-no-gdr.txt": readertest.Wants("job",
		"fail nccl.gdr NoGDRDMA", "pass nccl.p2p P2P", "pass nccl.net RDMANetwork",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	"synthetic-2node-init-only.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "unknown nccl.net NoNetworkLines",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	"synthetic-2node-socket-fallback.txt": readertest.Wants("job",
		"fail nccl.gdr NoGDRDMA", "skip nccl.p2p NoIntraNodePeers", "fail nccl.net SocketFallback",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	"synthetic-errors-ib-completion.txt": readertest.Wants("job",
		"pass nccl.gdr GDRDMA", "skip nccl.p2p NoIntraNodePeers", "pass nccl.net RDMANetwork",
		"pass nccl.version SameVersion", "fail nccl.errors NCCLErrors",
		"unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	"synthetic-nccl24-ring-srun-trace.txt": readertest.Wants("job",
		"pass nccl.gdr GDRDMA", "pass nccl.p2p P2P", "pass nccl.net RDMANetwork",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	"synthetic-network-mismatch.txt": readertest.Wants("job",
		"unknown nccl.gdr NoChannelLines", "unknown nccl.p2p NoChannelLines", "pass nccl.net RDMANetwork",
		"fail nccl.version NetworkMismatch", "pass nccl.errors NoErrors",
		"unknown nccl.channels NoChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	"synthetic-nvswitch-one-gpu-degraded.txt": readertest.Wants("job",
		"skip nccl.gdr NoInterNodeTraffic", "pass nccl.p2p P2P", "skip nccl.net NoNetwork",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "pass nccl.nvls NVLSInUse", "skip nccl.diag NoDiagnostics", "fail nccl.topology NVLinkDegraded hgx1",
	),
	"synthetic-pxn-collnet-subcomm.txt": readertest.Wants("job",
		"pass nccl.gdr GDRDMA", "pass nccl.p2p P2P", "pass nccl.net RDMANetwork",
		"pass nccl.version SameVersion", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
	"synthetic-version-mismatch.txt": readertest.Wants("job",
		"pass nccl.gdr GDRDMA", "skip nccl.p2p NoIntraNodePeers", "pass nccl.net RDMANetwork",
		"fail nccl.version VersionMismatch", "pass nccl.errors NoErrors",
		"pass nccl.channels ChannelCount", "skip nccl.nvls NoNVLSLines", "skip nccl.diag NoDiagnostics", "unknown nccl.topology NoSystemTree",
	),
}

func allUnknown(reason string) []readertest.Want {
	var out []readertest.Want
	for _, id := range []string{"nccl.gdr", "nccl.p2p", "nccl.net", "nccl.version", "nccl.errors", "nccl.channels", "nccl.nvls", "nccl.diag", "nccl.topology"} {
		out = append(out, readertest.Want{ID: id, Status: result.Unknown, Reason: reason, Subject: "job"})
	}
	return out
}

func TestVerdicts(t *testing.T) {
	reader.ExactSamples(t, wantVerdicts, func(x result.Result) bool { return x.Reason == "NCCLWarnings" }, func(t *testing.T, name string, vs []result.Result) {
		for _, x := range vs {
			for _, e := range x.Evidence {
				if !strings.HasPrefix(e.Source, name+":") || e.Value == "" {
					t.Errorf("%s: evidence %+v does not point at a line of %s", x.ID, e, name)
				}
			}
		}
	})
}

// TestEvidenceLines checks that evidence line numbers point at the line
// that says it (after the header is stripped).
func TestEvidenceLines(t *testing.T) {
	reader.EvidenceLines(t, func(line, value string) bool {
		val := strings.TrimSuffix(value, "...")
		return strings.Contains(line, val) || strings.Contains(strings.Join(strings.Fields(line), " "), strings.Join(strings.Fields(val), " "))
	})
}

// TestExtraction asserts the facts a reader of each sample must get right.
func TestExtraction(t *testing.T) {
	reader.Cases(t, []readertest.Case[*Report]{
		{File: "a100pcie-2node-gdr-level-sys-mixed-roce-ib-gather-dropoff.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
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
		{File: "aws-p5-2node-efa-ofi-gdrdma-full.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
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
		{File: "workstation-2gpu-no-ib-socket-shm-garbled.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
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
		{File: "a100pcie-nvbridge-roce-gdr-disabled-24ch.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			eq(t, "coll", r.Channels.Counts[0].Coll, 24)
			eq(t, "p2p lines", transportLines(r, "P2P/direct pointer/read"), int64(48))
			eq(t, "hcas", len(r.GDR.HCAs), 3)
			eq(t, "vnic", r.GDR.HCAs[2].Name, "mlx5_0+mlx5_1")
			eq(t, "ib", ibDevs(host(t, r, "mew0")), "0:mlx5_0:1/RoCE 1:mlx5_1:1/RoCE")
			eq(t, "oob", host(t, r, "mew0").IBOOB, "eno8303:192.168.0.3<0>")
			eq(t, "nnodes", r.Comms[0].NNodes, 1)
		}},
		{File: "a100pcie-nvbridge-degraded-topo-2ch.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			p := r.Channels.Patterns[0]
			if p.Pattern != 4 || p.Name != "ring" || p.NChannels != 1 || p.BWIntra != 20 || p.TypeIntra != "NVL" || p.TypeInter != "PIX" {
				t.Errorf("pattern = %+v", p)
			}
			eq(t, "finding", r.Topology[0].Findings[0].Kind, "nvlink-asymmetric")
			eq(t, "topo file", env(r, "NCCL_TOPO_FILE"), "/home/zx/nccl-tests/topo_fail.xml")
		}},
		{File: "h200-kvm-vm-topo-system-pci0.2-emulated-switch-gdrdma-excerpt.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			tr := r.Topology[0]
			if tr.GPUs != 8 || tr.NICs != 8 || tr.NVLinks != 8 || len(tr.Findings) != 8 {
				t.Errorf("tree = %d GPUs %d NICs %d NVLinks %d findings", tr.GPUs, tr.NICs, tr.NVLinks, len(tr.Findings))
			}
			if tr.MaxBW != 48 || tr.TotalBW != 370.8 || !tr.Complete {
				t.Errorf("tree header = %v %v %v", tr.MaxBW, tr.TotalBW, tr.Complete)
			}
			eq(t, "hosts", hostNames(r), "node_2 node1")
		}},
		{File: "h200x1-vm-single-rank-socket-fallback-all-subsys.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
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
		{File: "roce-2hca-gdr-disabled-peermem-loaded-excerpt.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			if !r.Network.NonDevicePlugin {
				t.Error("Using non-device net plugin version 0: want non_device_plugin")
			}
			rk := r.Ranks[0]
			if rk.NRanks != 16 || rk.BusID != "1c000" || rk.CommID != "0x65e0bd6ee7449db4" || rk.PID != 25668 {
				t.Errorf("rank = %+v", rk)
			}
			eq(t, "oob", host(t, r, "hostname1").IBOOB, "primaryip:10.10.10.10<0>")
		}},
		{File: "a100-intranode-ranks-via-net-ib-gdrdma-excerpt.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			eq(t, "ranks", intRanges(host(t, r, "10-90-43-152").Ranks), "0-3")
			eq(t, "intra", r.Channels.IntraNode, int64(12))
			for _, rk := range r.Ranks {
				if rk.Source != "channel" || rk.Host != "10-90-43-152" {
					t.Errorf("rank %+v", rk)
				}
			}
		}},
		{File: "synthetic-nccl24-ring-srun-trace.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
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
		{File: "synthetic-errors-ib-completion.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
			eq(t, "errors", r.ErrorCount, int64(7))
			eq(t, "warnings", r.WarningCount, int64(1))
			eq(t, "distinct", len(r.Errors), 6)
			eq(t, "completion x2", r.Errors[0].Count, int64(2))
		}},
		{File: "synthetic-pxn-collnet-subcomm.txt", Check: func(t *testing.T, r *Report, _ []result.Result) {
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
	})
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

// Issue 26 class 7: the Ray worker prefix is learned from the lines and
// removed, the paste note says so, and the host stays NCCL's.
func TestLearnedPrefix(t *testing.T) {
	r, _ := reader.Sample(t, "vllm2442-ray-worker-prefix-v100-tp4-p2p-ipc-excerpt.txt")
	if n := r.Paste.String(); !strings.Contains(n, `learned "(RayWorker pid=75833) " removed from 8 lines`) {
		t.Errorf("paste note %q", n)
	}
	if len(r.Hosts) != 1 || r.Hosts[0].Name != "bms-airtrunk-c-g1v2-app-10-214-144-75" {
		t.Errorf("hosts %+v", r.Hosts)
	}
}
