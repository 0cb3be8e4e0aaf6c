package smitopo

import (
	"flag"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var reader = readertest.Reader[*Report]{Detect: Detect, Analyze: Analyze}

func TestGolden(t *testing.T) { reader.GoldenSamples(t, *update, nil) }

// pairs is "GPU0=NIC3:PIX GPU1=NIC5:PIX ..." for every GPU.
func pairs(p *Pairing) string {
	var s []string
	for _, e := range p.GPUs {
		s = append(s, e.GPU+"="+e.NIC+":"+e.Level)
	}
	return strings.Join(s, " ")
}

var samples = []struct {
	file     string
	verdicts []string
	pairs    string
	unused   string
}{
	{"a100pcie-1gpu-4nic-mixed-tabs-spaces-garbled.txt", []string{"fail gdr.nic-affinity NICBeyondGDRLevel GPU0-mlx5_2"},
		"GPU0=NIC2:NODE", "NIC0 NIC1 NIC3"},
	{"asus-esc8000a-e12-4x-rtx6000ada-pcie.txt", []string{"fail gdr.nic-affinity NICBeyondGDRLevel GPU0-mlx5_0", "fail gdr.nic-affinity NICBeyondGDRLevel GPU3-mlx5_3"},
		"GPU0=NIC0:NODE GPU1=NIC1:NODE GPU2=NIC2:NODE GPU3=NIC3:NODE", ""},
	{"azure-nc96v4-a100pcie-nvbridge-pairs-vm.txt", []string{"skip gdr.nic-affinity NoRDMADevice node", "pass topo.nvlink NVLinkEven node"},
		"GPU0=:- GPU1=:- GPU2=:- GPU3=:-", ""},
	{"dell-h100-topo-mp-12nic-3nics-on-gpu0-switch.txt", []string{"pass gdr.nic-affinity NICAtPIX GPU0-mlx5_0", "pass gdr.nic-affinity NICAtPIX GPU4-mlx5_6"},
		"GPU0=NIC0:PIX GPU1=NIC3:PIX GPU2=NIC4:PIX GPU3=NIC5:PIX GPU4=NIC6:PIX GPU5=NIC9:PIX GPU6=NIC10:PIX GPU7=NIC11:PIX", "NIC1 NIC2 NIC7 NIC8"},
	{"gke-a4-b200-8nic-pix-pairs.txt", []string{"pass gdr.nic-affinity NICAtPIX GPU1-mlx5_1", "pass topo.nvlink NVLinkEven node"},
		"GPU0=NIC0:PIX GPU1=NIC1:PIX GPU2=NIC2:PIX GPU3=NIC3:PIX GPU4=NIC4:PIX GPU5=NIC5:PIX GPU6=NIC6:PIX GPU7=NIC7:PIX", ""},
	{"h200x8-10nic-gpu3-triple-pix-tabs.txt", []string{"pass gdr.nic-affinity NICAtPIX GPU3-mlx5_0"},
		"GPU0=NIC3:PIX GPU1=NIC5:PIX GPU2=NIC4:PIX GPU3=NIC0:PIX GPU4=NIC7:PIX GPU5=NIC9:PIX GPU6=NIC8:PIX GPU7=NIC6:PIX", "NIC1 NIC2"},
	{"h800x4-slice-17nic-no-affinity-tabs.txt", []string{"pass gdr.nic-affinity NICAtPIX GPU0-mlx5_4"},
		"GPU0=NIC4:PIX GPU1=NIC6:PIX GPU2=NIC7:PIX GPU3=NIC8:PIX", "NIC0 NIC1 NIC2 NIC3 NIC5 NIC9 NIC10 NIC11 NIC12 NIC13 NIC14 NIC15 NIC16"},
	{"hgx-h100-roce400g-12nic-tabs.txt", []string{"pass gdr.nic-affinity NICAtPIX GPU7-mlx5_11"},
		"GPU0=NIC0:PIX GPU1=NIC1:PIX GPU2=NIC2:PIX GPU3=NIC5:PIX GPU4=NIC6:PIX GPU5=NIC7:PIX GPU6=NIC8:PIX GPU7=NIC11:PIX", "NIC3 NIC4 NIC9 NIC10"},
	{"princeton-traverse-4xv100-power9-nv3-pairs-numa8.txt", []string{"fail gdr.nic-affinity NICBeyondGDRLevel GPU2-mlx5_2", "pass topo.nvlink NVLinkEven node"},
		"GPU0=mlx5_0:NODE GPU1=mlx5_1:NODE GPU2=mlx5_2:NODE GPU3=mlx5_3:NODE", ""},
	// The same matrix under a test harness's logger prefix (issue 26
	// class 7): learned from the lines, removed, the same verdicts.
	{"vastai-4xa100-nv10-degraded-harness-logger-prefix-TRANSFORMED.txt", []string{"fail gdr.nic-affinity NICBeyondGDRLevel GPU0-mlx5_0", "warn topo.nvlink NVLinkDegraded node"},
		"GPU0=NIC0:NODE GPU1=NIC1:NODE GPU2=NIC0:NODE GPU3=NIC1:NODE", ""},
	{"puget-wrx90-2x-rtx6000ada-pcie.txt", []string{"fail gdr.nic-affinity NICBeyondGDRLevel GPU0-mlx5_0", "fail gdr.nic-affinity NICBeyondGDRLevel GPU1-mlx5_1"},
		"GPU0=NIC0:NODE GPU1=NIC1:NODE", ""},
	// NV10 between GPU2 and GPU3 where GPU0-GPU1 have NV12: two links of
	// that bridge are down (issue 26 class 8).
	{"vastai-4xa100-sxm4-nvlink-pairs-nv12-nv10-degraded.txt", []string{"fail gdr.nic-affinity NICBeyondGDRLevel GPU0-mlx5_0", "warn topo.nvlink NVLinkDegraded node"},
		"GPU0=NIC0:NODE GPU1=NIC1:NODE GPU2=NIC0:NODE GPU3=NIC1:NODE", ""},
	// Old (2016) legend: SOC cells are today's SYS; no NIC, so nothing to pair.
	{"nccl-issue19-k80x6-soc-legend-2016-prompt-fence.txt", []string{"skip gdr.nic-affinity NoRDMADevice node"},
		"GPU0=:- GPU1=:- GPU2=:- GPU3=:- GPU4=:- GPU5=:-", ""},
	// The only NIC is SYS from every GPU: eight failures, none passes.
	{"nccl-tests-issue273-l40sx8-1nic-sys-fenced.txt", []string{"fail gdr.nic-affinity NICBeyondGDRLevel GPU0-NIC0", "fail gdr.nic-affinity NICBeyondGDRLevel GPU7-NIC0"},
		"GPU0=NIC0:SYS GPU1=NIC0:SYS GPU2=NIC0:SYS GPU3=NIC0:SYS GPU4=NIC0:SYS GPU5=NIC0:SYS GPU6=NIC0:SYS GPU7=NIC0:SYS", ""},
	// The -p2p matrix after the legend is not read as topology.
	{"club3090-issue1229-2x5090-phb-tabs-then-p2p-matrix.txt", []string{"skip gdr.nic-affinity NoRDMADevice node"},
		"GPU0=:- GPU1=:-", ""},
	// Cut after GPU4's row: GPU0-4 judged (two GPUs per PIX NIC, shared
	// as NCCL shares them), the rest named as not read.
	{"nccl-tests-issue78-dgx2-16gpu-mlx5-columns-excerpt.txt", []string{"unknown gdr.nic-affinity RowsMissing node",
		"pass gdr.nic-affinity NICAtPIX GPU1-mlx5_0", "pass gdr.nic-affinity NICAtPIX GPU3-mlx5_1"},
		"GPU0=mlx5_0:PIX GPU1=mlx5_0:PIX GPU2=mlx5_1:PIX GPU3=mlx5_1:PIX GPU4=mlx5_2:PIX", "mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_7 mlx5_8 mlx5_9"},
	// Cut inside GPU7's row: that row is skipped and said so.
	{"nccl-issue933-h800x8-9nic-bash-fence-excerpt.txt", []string{"unknown gdr.nic-affinity RowsMissing node", "pass gdr.nic-affinity NICAtPIX GPU0-NIC2", "pass gdr.nic-affinity NICAtPIX GPU6-NIC5"},
		"GPU0=NIC2:PIX GPU1=NIC4:PIX GPU2=NIC6:PIX GPU3=NIC8:PIX GPU4=NIC1:PIX GPU5=NIC3:PIX GPU6=NIC5:PIX", "NIC0 NIC7"},
	// Four NICs at PXB per GPU pair (legend from mlx5_2, a bond last):
	// a NIC of its own each, half the rails and the bond unused.
	{"xuesongtap-blog-a100x8-17nic-pxb-quads-bond-prompt.txt", []string{"pass gdr.nic-affinity NICAtPXB GPU0-mlx5_2", "pass gdr.nic-affinity NICAtPXB GPU7-mlx5_15"},
		"GPU0=NIC0:PXB GPU1=NIC1:PXB GPU2=NIC4:PXB GPU3=NIC5:PXB GPU4=NIC8:PXB GPU5=NIC9:PXB GPU6=NIC12:PXB GPU7=NIC13:PXB", "NIC2 NIC3 NIC6 NIC7 NIC10 NIC11 NIC14 NIC15 NIC16"},
	// Everything at SYS: four GPUs fail on two shared ports.
	{"xuesongtap-blog-a10x4-2nic-all-sys-prompt-nospace.txt", []string{"fail gdr.nic-affinity NICBeyondGDRLevel GPU0-mlx5_0", "fail gdr.nic-affinity NICBeyondGDRLevel GPU3-mlx5_1"},
		"GPU0=NIC0:SYS GPU1=NIC1:SYS GPU2=NIC0:SYS GPU3=NIC1:SYS", ""},
	// CRLF on every line, a '>' prompt: 3 of 8 GPUs have a PIX NIC.
	{"llm-action-a800x8-4nic-crlf-gt-prompt.txt", []string{"fail gdr.nic-affinity NICBeyondGDRLevel GPU0-mlx5_0", "pass gdr.nic-affinity NICAtPIX GPU1-mlx5_0",
		"pass gdr.nic-affinity NICAtPIX GPU3-mlx5_1", "pass gdr.nic-affinity NICAtPIX GPU7-mlx5_2", "fail gdr.nic-affinity NICBeyondGDRLevel GPU6-mlx5_3"},
		"GPU0=NIC0:NODE GPU1=NIC0:PIX GPU2=NIC1:NODE GPU3=NIC1:PIX GPU4=NIC3:NODE GPU5=NIC2:NODE GPU6=NIC3:NODE GPU7=NIC2:PIX", ""},
	// Issue 26 class 7: the header's first labels run together
	// ("GPU0GPU1...GPU7mlx5_0") in a web page's code block: split back.
	{"dgx1-glued-header-gpu0gpu1-soc-legend-sheffield-lab05.txt", []string{"pass gdr.nic-affinity NICAtPIX GPU0-mlx5_0", "pass gdr.nic-affinity NICAtPIX GPU7-mlx5_3", "pass topo.nvlink NVLinkEven node"},
		"GPU0=mlx5_0:PIX GPU1=mlx5_0:PIX GPU2=mlx5_1:PIX GPU3=mlx5_1:PIX GPU4=mlx5_2:PIX GPU5=mlx5_2:PIX GPU6=mlx5_3:PIX GPU7=mlx5_3:PIX", ""},
	{"synthetic-2gpu-phb-nic-and-no-nic-gpu.txt", []string{
		"pass gdr.nic-affinity NICAtPXB GPU0-mlx5_3", "fail gdr.nic-affinity NICBeyondGDRLevel GPU1-mlx5_2", "pass gdr.nic-affinity NICAtPXB GPU2-mlx5_2"},
		"GPU0=NIC1:PXB GPU1=NIC0:PHB GPU2=NIC0:PXB", ""},
}

func TestSamples(t *testing.T) {
	covered := map[string]bool{}
	for _, s := range samples {
		covered[s.file] = true
		t.Run(s.file, func(t *testing.T) {
			r, vs := reader.Sample(t, s.file)
			readertest.WantVerdicts(t, vs, s.verdicts)
			if got := pairs(r.Pairing); got != s.pairs {
				t.Errorf("pairing\n got %s\nwant %s", got, s.pairs)
			}
			if got := strings.Join(r.Pairing.Unused, " "); got != s.unused {
				t.Errorf("unused NICs %q, want %q", got, s.unused)
			}
			for _, v := range vs {
				gpu, _, _ := strings.Cut(v.Subject, "-")
				if v.Status == "fail" && (!strings.Contains(v.Message, "host memory") || !strings.Contains(v.Message, gpu) || v.Remedy == "") {
					t.Errorf("fail verdict must name the GPU, the path and host-memory staging: %+v", v)
				}
			}
		})
	}
	readertest.Covered(t, covered)
}

func TestPairingDistinctNICs(t *testing.T) {
	// Two GPUs behind one switch with two NICs, where the first GPU's
	// first choice is also the second GPU's only PIX NIC: the matching
	// must move the first GPU to its other NIC.
	in := "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\n" +
		"GPU0\t X \tPIX\tPIX\tPIX\t0-7\t0\n" +
		"GPU1\tPIX\t X \tPIX\tNODE\t0-7\t0\n" +
		"NIC0\tPIX\tPIX\t X \tPIX\n" +
		"NIC1\tPIX\tNODE\tPIX\t X \n"
	r, _, err := Analyze("m.txt", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := pairs(r.Pairing); got != "GPU0=NIC1:PIX GPU1=NIC0:PIX" {
		t.Errorf("pairing %s", got)
	}
}

func TestUnreadable(t *testing.T) {
	reader.WantErrors(t, map[string]string{
		"no matrix here\n": "x.txt:1:",
		"\tGPU0\tNIC0\tCPU Affinity\nGPU0\t X \tBOGUS\t0\n": "x.txt:2:",
	})
}

func TestWriteFuzzSeeds(t *testing.T) { readertest.FuzzSeeds(t, 0, "FuzzAnalyze") }

func FuzzAnalyze(f *testing.F) {
	reader.FuzzAnalyze(f, "\tGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPIX\t0-7\t0\nNIC0\tPIX\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n")
}

// TestRepeatedLastRow is review D2: a matrix whose last row is pasted twice
// once indexed past the header's labels and panicked.
func TestRepeatedLastRow(t *testing.T) {
	reader.WantErrors(t, map[string]string{
		"\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\t0-31\t0\nGPU1\tNV12\t X \t0-31\t0\nGPU1\tNV12\t X \t0-31\t0\n": "x.txt:4: row GPU1 appears twice",
		// The fuzzer's crasher had five columns ("index out of range [5]
		// with length 5"); testdata/fuzz/FuzzAnalyze/crash-repeated-last-row
		// keeps this input in the corpus.
		crasher: "x.txt:7: row NIC1 appears twice",
	})
}

const crasher = "\tGPU0\tGPU1\tGPU2\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\n" +
	"GPU0\t X \tPHB\tPXB\tPXB\tPXB\t0-23\t0\n" +
	"GPU1\tPHB\t X \tPHB\tPHB\tPHB\t0-23\t0\n" +
	"GPU2\tPXB\tPHB\t X \tPXB\tPHB\t0-23\t0\n" +
	"NIC0\tPXB\tPHB\tPXB\t X \tPIX\n" +
	"NIC1\tPXB\tPHB\tPHB\tPIX\t X \n" +
	"NIC1\tPXB\tPHB\tPHB\tPIX\t X \n"

// TestCrasherSeed keeps the D2 crasher in the fuzz corpus, so that every
// fuzz run (and go test, which runs the corpus) replays it.
func TestCrasherSeed(t *testing.T) {
	readertest.WantSeed(t, "FuzzAnalyze", "crash-repeated-last-row", []byte(crasher))
}

// TestOldAndCut checks what the verdicts cannot show: SOC read as SYS and
// noted, a cut row named with its line.
func TestOldAndCut(t *testing.T) {
	r, _ := reader.Sample(t, "nccl-issue19-k80x6-soc-legend-2016-prompt-fence.txt")
	if c := r.Matrix.Cells[0]; c[2] != "SYS" || c[1] != "PIX" || len(r.Matrix.Skipped) != 1 || !strings.Contains(r.Matrix.Skipped[0], "SOC") {
		t.Errorf("GPU0 row %v, skipped %v", c, r.Matrix.Skipped)
	}
	r, vs := reader.Sample(t, "nccl-issue933-h800x8-9nic-bash-fence-excerpt.txt")
	if len(r.Matrix.Skipped) != 1 || !strings.Contains(r.Matrix.Skipped[0], "line 11: row GPU7") || !strings.Contains(vs[0].Message, "GPU7") {
		t.Errorf("skipped %v, first verdict %+v", r.Matrix.Skipped, vs[0])
	}
}

// TestNVLinkOnlyWhereShown: a matrix without NV# cells gets no NVLink
// verdict (PCIe-only hosts are not "NVLink degraded"); one with them gets
// exactly one.
func TestNVLinkOnlyWhereShown(t *testing.T) {
	for file, want := range map[string]int{"puget-wrx90-2x-rtx6000ada-pcie.txt": 0, "asus-esc8000a-e12-4x-rtx6000ada-pcie.txt": 0,
		"vastai-4xa100-sxm4-nvlink-pairs-nv12-nv10-degraded.txt": 1, "hgx-h100-roce400g-12nic-tabs.txt": 1} {
		_, vs := reader.Sample(t, file)
		n := 0
		for _, v := range vs {
			if v.ID == IDNVLink {
				n++
			}
		}
		if n != want {
			t.Errorf("%s: %d %s verdicts, want %d", file, n, IDNVLink, want)
		}
	}
}
