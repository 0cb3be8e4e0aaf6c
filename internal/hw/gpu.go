// Package hw is gdrcheck's one catalogue of hardware facts: GPU models
// (names, compute capability, memory bandwidth, NVLink links, rate and
// generation, PCIe generation and width), NICs by PCI device ID, and PCIe
// generations (transfer rate, encoding, usable bandwidth). Every entry
// names its public source. The model, the checks and the analyzers look
// hardware up here and nowhere else.
package hw

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// GPU is what a GPU model should do, from its datasheet.
type GPU struct {
	Key  string `json:"key"`  // h100-sxm
	Name string `json:"name"` // NVIDIA H100 SXM5 80GB
	// Short is the name people use for the part: "H100 SXM".
	Short string `json:"short"`
	// Aliases are other names --gpu accepts.
	Aliases []string `json:"aliases,omitempty"`
	Arch    string   `json:"arch"` // Volta, Turing, Ampere, Ada, Hopper, Blackwell
	// ComputeCap is the CUDA compute capability ×10 (90 for sm_90); NCCL
	// keys its NVLink bandwidth and tuning constants on it.
	ComputeCap int     `json:"compute_capability"`
	FormFactor string  `json:"form_factor"` // SXM, PCIe
	MemType    string  `json:"memory_type"`
	MemGBps    float64 `json:"memory_gbps"` // peak memory bandwidth, GB/s
	// NVLink: generation, links per GPU, and line rate per link and
	// direction in GB/s (datasheets quote the sum of both directions over
	// all links: 900 GB/s = 18 links × 25 GB/s × 2).
	NVLinkGen      int     `json:"nvlink_gen,omitempty"`
	NVLinks        int     `json:"nvlinks,omitempty"`
	NVLinkLinkGBps float64 `json:"nvlink_link_gbps,omitempty"`
	// NVLinkBridge: NVLink comes as a bridge between two (or four) cards,
	// not an NVSwitch baseboard.
	NVLinkBridge bool `json:"nvlink_bridge,omitempty"`
	// NVSwitchBoard: the 8-GPU baseboard of this part has NVSwitches.
	NVSwitchBoard bool `json:"nvswitch_board,omitempty"`
	// NVLS: NVLink SHARP is available with the NVSwitches of its baseboard.
	NVLS      bool   `json:"nvls,omitempty"`
	PCIeGen   int    `json:"pcie_gen"`
	PCIeWidth int    `json:"pcie_width"`
	Source    string `json:"source"`

	// match lists token patterns of the driver's name ("NVIDIA H100 80GB
	// HBM3"); every pattern must match a token ("sxm*" matches a token
	// starting with "sxm").
	match     []string
	deviceIDs []uint16
}

// Sources. NVIDIA's datasheets where NVIDIA publishes one; for parts sold
// only in China (H800, A800, H20) NVIDIA publishes no English datasheet,
// and the entries cite the public reports they rest on.
const (
	dsH100  = "NVIDIA H100 Tensor Core GPU datasheet, https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
	dsH200  = "NVIDIA H200 Tensor Core GPU product page/datasheet, https://www.nvidia.com/en-us/data-center/h200/"
	dsH800  = "H800: NVLink 400 GB/s bidirectional, 8 links (nominal 200 GB/s per direction per DeepSeek, https://github.com/deepseek-ai/DeepEP/issues/16); memory as H100 SXM (HBM3, 3.35 TB/s)"
	dsH20   = "H20 (China market, no public NVIDIA datasheet): 96 GB HBM3 at 4.0 TB/s, NVLink 4 900 GB/s, https://willitrunai.com/gpus/h20-96gb; Hopper, so PCIe Gen5 x16 as H100 SXM"
	dsA100  = "NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
	dsA800  = "A800 (China market): A100 with NVLink limited to 400 GB/s (8 of A100's 12 links), otherwise as A100 (Reuters via https://tweakers.net/nieuws/203182/nvidia-introduceert-a800-gpu-voor-china-die-niet-onder-exportrestricties-vs-valt.html); memory and PCIe as A100 80GB SXM, " + dsA100
	dsB200  = "NVIDIA DGX B200 datasheet (8x B200: 64 TB/s HBM3e, NVLink 5 1.8 TB/s per GPU), https://resources.nvidia.com/en-us-dgx-systems/dgxb200-datasheet"
	dsB300  = "NVIDIA HGX B300 (per GPU 288 GB HBM3e up to 8 TB/s, NVLink 5 1.8 TB/s), https://www.nvidia.com/en-us/data-center/hgx/ and https://acecloud.ai/blog/nvidia-hgx-b300; PCIe Gen6 x16 (https://glennklockwood.com/garden/processors/B300, and 64 GT/s x16 in the capture nccltopo/testdata/crusoe-b300-vm-cloud-hypervisor-topo.txt)"
	dsGB200 = "NVIDIA GB200 NVL72 (per GPU up to 186 GB HBM3e at 8 TB/s, NVLink 5 1.8 TB/s, 18 links), https://www.nvidia.com/en-us/data-center/gb200-nvl72/; PCIe as its silicon twin B200 (Gen5 x16, " + dsB200 + ")"
	dsGB300 = "NVIDIA GB300 NVL72 (per GPU 288 GB HBM3e at 8 TB/s, NVLink 5 1.8 TB/s, 18 links), https://www.nvidia.com/en-us/data-center/gb300-nvl72/; PCIe as its silicon twin B300 (Gen6 x16)"
	dsL40S  = "NVIDIA L40S datasheet, https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"
	dsR6000 = "NVIDIA RTX 6000 Ada Generation datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/rtx-6000/proviz-print-rtx6000-datasheet-web-2504660.pdf"
	dsRPro  = "NVIDIA RTX PRO 6000 Blackwell Server Edition (96 GB GDDR7, 1.6 TB/s, PCIe Gen5 x16, no NVLink), https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/"
	dsV100  = "NVIDIA V100 Tensor Core GPU datasheet, https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
	dsT4    = "NVIDIA T4 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf"
	dsA6000 = "NVIDIA RTX A6000 datasheet (NVLink bridge 112.5 GB/s bidirectional), https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/quadro-product-literature/proviz-print-nvidia-rtx-a6000-datasheet-us-nvidia-1454980-r9-web%20(1).pdf"
	dsA40   = "NVIDIA A40 datasheet (NVLink bridge 112.5 GB/s bidirectional), https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf"
)

// gpus is the GPU table, most specific match first. Device IDs are only
// those confirmed by real captures in testdata/ and the corpus.
//
// It replaces four tables that disagreed; where they did, this is what
// the sources say:
//   - H20, A800, B300 (and GB200/GB300, which the old name patterns
//     "B200"/"B300" and `G?B[23]00` also matched) were known to the checks
//     and the nccl-tests reader but not to the model; they are here now.
//   - The nccl-tests reader kept per-direction NVLink GB/s per name
//     pattern; it is NVLinks × NVLinkLinkGBps here (A100 12 × 25 = 300,
//     A800 and H800 8 × 25 = 200, H100/H200/H20 18 × 25 = 450, Blackwell
//     18 × 50 = 900): the same numbers.
//   - The NCCL topology reader keyed NVSwitch link counts and PCIe speeds
//     by SM alone (80: 12 links, 90: 18), which is wrong for A800 and H800
//     (SM 80 and 90 with 8 links) and unknown for B300 (SM 103). It now
//     looks the GPU up by PCI device ID, and by SM only where every part of
//     that SM agrees (NVSwitchLinksOfSM, PCIeGenOfSM).
var gpus = [...]GPU{
	{Key: "h100-sxm", Name: "NVIDIA H100 SXM5 80GB", Short: "H100 SXM", Aliases: []string{"h100"}, Arch: "Hopper", ComputeCap: 90, FormFactor: "SXM",
		MemType: "HBM3", MemGBps: 3350, NVLinkGen: 4, NVLinks: 18, NVLinkLinkGBps: 25, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH100 + " (H100 SXM: 3.35 TB/s, NVLink 900 GB/s, PCIe Gen5 128 GB/s)",
		match: []string{"h100", "sxm*"}, deviceIDs: []uint16{0x2330}},
	{Key: "h100-nvl", Name: "NVIDIA H100 NVL 94GB", Short: "H100 NVL", Arch: "Hopper", ComputeCap: 90, FormFactor: "PCIe",
		MemType: "HBM3", MemGBps: 3900, NVLinkGen: 4, NVLinks: 12, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH100 + " (H100 NVL: 3.9 TB/s, NVLink bridge 600 GB/s)",
		match: []string{"h100", "nvl"}},
	{Key: "h100-pcie", Name: "NVIDIA H100 PCIe 80GB", Short: "H100 PCIe", Arch: "Hopper", ComputeCap: 90, FormFactor: "PCIe",
		MemType: "HBM2e", MemGBps: 2000, NVLinkGen: 4, NVLinks: 12, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH100 + " (H100 PCIe: 2 TB/s, NVLink bridge 600 GB/s)",
		match: []string{"h100", "pcie"}},
	// "NVIDIA H100 80GB HBM3" is how the driver names the SXM5 part.
	{Key: "h100-sxm", match: []string{"h100", "hbm3"}},
	{Key: "h200-nvl", Name: "NVIDIA H200 NVL 141GB", Short: "H200 NVL", Arch: "Hopper", ComputeCap: 90, FormFactor: "PCIe",
		MemType: "HBM3e", MemGBps: 4800, NVLinkGen: 4, NVLinks: 18, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH200 + " (H200 NVL: 4.8 TB/s, 2- or 4-way NVLink bridge 900 GB/s)",
		match: []string{"h200", "nvl"}},
	{Key: "h200-sxm", Name: "NVIDIA H200 SXM 141GB", Short: "H200 SXM", Aliases: []string{"h200"}, Arch: "Hopper", ComputeCap: 90, FormFactor: "SXM",
		MemType: "HBM3e", MemGBps: 4800, NVLinkGen: 4, NVLinks: 18, NVLinkLinkGBps: 25, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH200 + " (H200 SXM: 4.8 TB/s, NVLink 900 GB/s, PCIe Gen5 128 GB/s)",
		match: []string{"h200"}, deviceIDs: []uint16{0x2335}},
	{Key: "h800-sxm", Name: "NVIDIA H800 SXM5 80GB", Short: "H800 SXM", Aliases: []string{"h800"}, Arch: "Hopper", ComputeCap: 90, FormFactor: "SXM",
		MemType: "HBM3", MemGBps: 3350, NVLinkGen: 4, NVLinks: 8, NVLinkLinkGBps: 25, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH800,
		match: []string{"h800"}},
	{Key: "h20", Name: "NVIDIA H20 96GB", Short: "H20", Arch: "Hopper", ComputeCap: 90, FormFactor: "SXM",
		MemType: "HBM3", MemGBps: 4000, NVLinkGen: 4, NVLinks: 18, NVLinkLinkGBps: 25, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH20,
		match: []string{"h20"}},
	{Key: "a100-sxm-80gb", Name: "NVIDIA A100 SXM4 80GB", Short: "A100 SXM", Aliases: []string{"a100", "a100-sxm"}, Arch: "Ampere", ComputeCap: 80, FormFactor: "SXM",
		MemType: "HBM2e", MemGBps: 2039, NVLinkGen: 3, NVLinks: 12, NVLinkLinkGBps: 25, NVSwitchBoard: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA100 + " (A100 80GB SXM: 2039 GB/s, NVLink 600 GB/s, PCIe Gen4 64 GB/s)",
		match: []string{"a100", "sxm*", "80gb"}, deviceIDs: []uint16{0x20b2}},
	{Key: "a100-sxm-40gb", Name: "NVIDIA A100 SXM4 40GB", Short: "A100 SXM", Aliases: []string{"a100-40gb"}, Arch: "Ampere", ComputeCap: 80, FormFactor: "SXM",
		MemType: "HBM2", MemGBps: 1555, NVLinkGen: 3, NVLinks: 12, NVLinkLinkGBps: 25, NVSwitchBoard: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA100 + " (A100 40GB SXM: 1555 GB/s, NVLink 600 GB/s)",
		match: []string{"a100", "sxm*"}, deviceIDs: []uint16{0x20b0}},
	{Key: "a100-pcie-80gb", Name: "NVIDIA A100 PCIe 80GB", Short: "A100 PCIe", Aliases: []string{"a100-pcie"}, Arch: "Ampere", ComputeCap: 80, FormFactor: "PCIe",
		MemType: "HBM2e", MemGBps: 1935, NVLinkGen: 3, NVLinks: 12, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA100 + " (A100 80GB PCIe: 1935 GB/s, NVLink bridge for 2 GPUs 600 GB/s)",
		match: []string{"a100", "80gb", "pcie"}, deviceIDs: []uint16{0x20b5}},
	{Key: "a100-pcie-40gb", Name: "NVIDIA A100 PCIe 40GB", Short: "A100 PCIe", Arch: "Ampere", ComputeCap: 80, FormFactor: "PCIe",
		MemType: "HBM2", MemGBps: 1555, NVLinkGen: 3, NVLinks: 12, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA100 + " (A100 40GB PCIe: 1555 GB/s, NVLink bridge 600 GB/s)",
		match: []string{"a100", "pcie"}},
	{Key: "a800-sxm", Name: "NVIDIA A800 SXM4 80GB", Short: "A800 SXM", Aliases: []string{"a800"}, Arch: "Ampere", ComputeCap: 80, FormFactor: "SXM",
		MemType: "HBM2e", MemGBps: 2039, NVLinkGen: 3, NVLinks: 8, NVLinkLinkGBps: 25, NVSwitchBoard: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA800,
		match: []string{"a800", "sxm*"}},
	{Key: "b200", Name: "NVIDIA B200", Short: "B200", Arch: "Blackwell", ComputeCap: 100, FormFactor: "SXM",
		MemType: "HBM3e", MemGBps: 8000, NVLinkGen: 5, NVLinks: 18, NVLinkLinkGBps: 50, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsB200,
		match: []string{"b200"}, deviceIDs: []uint16{0x2901}},
	{Key: "b300", Name: "NVIDIA B300 SXM 288GB", Short: "B300", Arch: "Blackwell", ComputeCap: 103, FormFactor: "SXM",
		MemType: "HBM3e", MemGBps: 8000, NVLinkGen: 5, NVLinks: 18, NVLinkLinkGBps: 50, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 6, PCIeWidth: 16, Source: dsB300,
		match: []string{"b300"}, deviceIDs: []uint16{0x3182}},
	{Key: "gb200", Name: "NVIDIA GB200", Short: "GB200", Arch: "Blackwell", ComputeCap: 100, FormFactor: "SXM",
		MemType: "HBM3e", MemGBps: 8000, NVLinkGen: 5, NVLinks: 18, NVLinkLinkGBps: 50, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsGB200,
		match: []string{"gb200"}},
	{Key: "gb300", Name: "NVIDIA GB300", Short: "GB300", Arch: "Blackwell", ComputeCap: 103, FormFactor: "SXM",
		MemType: "HBM3e", MemGBps: 8000, NVLinkGen: 5, NVLinks: 18, NVLinkLinkGBps: 50, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 6, PCIeWidth: 16, Source: dsGB300,
		match: []string{"gb300"}},
	{Key: "l40s", Name: "NVIDIA L40S", Short: "L40S", Arch: "Ada", ComputeCap: 89, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 864, PCIeGen: 4, PCIeWidth: 16, Source: dsL40S + " (864 GB/s, PCIe Gen4 x16, no NVLink)",
		match: []string{"l40s"}, deviceIDs: []uint16{0x26b9}},
	{Key: "rtx6000-ada", Name: "NVIDIA RTX 6000 Ada Generation", Short: "RTX 6000 Ada", Aliases: []string{"rtx6000ada"}, Arch: "Ada", ComputeCap: 89, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 960, PCIeGen: 4, PCIeWidth: 16, Source: dsR6000 + " (960 GB/s, PCIe Gen4 x16, no NVLink)",
		match: []string{"rtx", "6000", "ada"}, deviceIDs: []uint16{0x26b1}},
	{Key: "rtx-pro-6000", Name: "NVIDIA RTX PRO 6000 Blackwell Server Edition", Short: "RTX PRO 6000", Arch: "Blackwell", ComputeCap: 120, FormFactor: "PCIe",
		MemType: "GDDR7", MemGBps: 1597, PCIeGen: 5, PCIeWidth: 16, Source: dsRPro,
		match: []string{"rtx", "pro", "6000"}},
	{Key: "rtx-a6000", Name: "NVIDIA RTX A6000", Short: "RTX A6000", Aliases: []string{"a6000"}, Arch: "Ampere", ComputeCap: 86, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 768, NVLinkGen: 3, NVLinks: 4, NVLinkLinkGBps: 14.0625, NVLinkBridge: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA6000,
		match: []string{"rtx", "a6000"}},
	{Key: "a40", Name: "NVIDIA A40", Short: "A40", Arch: "Ampere", ComputeCap: 86, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 696, NVLinkGen: 3, NVLinks: 4, NVLinkLinkGBps: 14.0625, NVLinkBridge: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA40,
		match: []string{"a40"}},
	{Key: "v100-sxm2", Name: "NVIDIA V100 SXM2", Short: "V100 SXM2", Aliases: []string{"v100"}, Arch: "Volta", ComputeCap: 70, FormFactor: "SXM",
		MemType: "HBM2", MemGBps: 900, NVLinkGen: 2, NVLinks: 6, NVLinkLinkGBps: 25,
		PCIeGen: 3, PCIeWidth: 16, Source: dsV100 + " (SXM2: 900 GB/s, NVLink 300 GB/s, PCIe 32 GB/s)",
		match: []string{"v100", "sxm*"}, deviceIDs: []uint16{0x1db5}},
	{Key: "v100-pcie", Name: "NVIDIA V100 PCIe", Short: "V100 PCIe", Arch: "Volta", ComputeCap: 70, FormFactor: "PCIe",
		MemType: "HBM2", MemGBps: 900, PCIeGen: 3, PCIeWidth: 16, Source: dsV100 + " (PCIe: 900 GB/s, PCIe 32 GB/s)",
		match: []string{"v100"}},
	{Key: "t4", Name: "NVIDIA T4", Short: "T4", Arch: "Turing", ComputeCap: 75, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 320, PCIeGen: 3, PCIeWidth: 16, Source: dsT4 + " (320 GB/s, PCIe Gen3 x16)",
		match: []string{"t4"}},
}

// GPUs lists the GPU table, one entry per model, by key.
func GPUs() []GPU {
	seen := map[string]bool{}
	var out []GPU
	for _, s := range gpus {
		if s.Name == "" || seen[s.Key] {
			continue
		}
		seen[s.Key] = true
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// GPUByKey finds a GPU by its key ("h100-sxm").
func GPUByKey(key string) (GPU, bool) {
	for _, s := range gpus {
		if s.Key == key && s.Name != "" {
			return s, true
		}
	}
	return GPU{}, false
}

// LookupGPU finds a GPU by a --gpu name: a key ("h100-sxm"), an alias
// ("h100") or a driver name ("NVIDIA H100 80GB HBM3").
func LookupGPU(name string) (GPU, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, s := range gpus {
		if s.Name == "" {
			continue
		}
		if n == s.Key || slices.Contains(s.Aliases, n) {
			return s, nil
		}
	}
	if s, ok := GPUByName(name); ok {
		return s, nil
	}
	var keys []string
	for _, s := range GPUs() {
		keys = append(keys, s.Key)
	}
	return GPU{}, fmt.Errorf("GPU %q: not in the model's table; known: %s", name, strings.Join(keys, ", "))
}

// GPUByName matches a driver's GPU name ("NVIDIA H100 80GB HBM3",
// "Tesla V100-SXM2-32GB") against the table.
func GPUByName(name string) (GPU, bool) {
	toks := nameTokens(name)
	if len(toks) == 0 {
		return GPU{}, false
	}
	for _, s := range gpus {
		if len(s.match) > 0 && matchAll(toks, s.match) {
			return GPUByKey(s.Key)
		}
	}
	return GPU{}, false
}

// GPUByDevice matches an NVIDIA PCI device ID.
func GPUByDevice(id uint16) (GPU, bool) {
	for _, s := range gpus {
		for _, d := range s.deviceIDs {
			if d == id {
				return GPUByKey(s.Key)
			}
		}
	}
	return GPU{}, false
}

func nameTokens(name string) []string {
	return strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

func matchAll(toks, pats []string) bool {
	for _, p := range pats {
		pre, wild := strings.CutSuffix(p, "*")
		if !slices.ContainsFunc(toks, func(t string) bool { return t == p || wild && strings.HasPrefix(t, pre) }) {
			return false
		}
	}
	return true
}

// NVLinkGBps is the GPU's NVLink line rate per direction over all its
// links, GB/s (datasheets quote twice this: both directions).
func (g GPU) NVLinkGBps() float64 { return float64(g.NVLinks) * g.NVLinkLinkGBps }

// NVSwitchLinksOfSM is the NVLink count of the NVSwitch-board parts of a
// compute capability (×10: 90 for sm_90), for when nothing but the SM is
// known. It is false when no such part is known or the parts disagree (sm_90:
// H100 and H200 have 18 links, H800 8; sm_80: A100 12, A800 8).
func NVSwitchLinksOfSM(sm int) (int, bool) {
	n := 0
	for _, g := range GPUs() {
		if g.ComputeCap != sm || !g.NVSwitchBoard {
			continue
		}
		if n != 0 && n != g.NVLinks {
			return 0, false
		}
		n = g.NVLinks
	}
	return n, n > 0
}

// PCIeGenOfSM is the PCIe generation every known part of a compute
// capability supports at least (sm_90: Gen5), for when nothing but the SM
// is known; false when no part of that SM is known.
func PCIeGenOfSM(sm int) (int, bool) {
	gen := 0
	for _, g := range GPUs() {
		if g.ComputeCap == sm && (gen == 0 || g.PCIeGen < gen) {
			gen = g.PCIeGen
		}
	}
	return gen, gen > 0
}

// DeviceIDs lists the NVIDIA PCI device IDs known for the GPU's model.
func (g GPU) DeviceIDs() []uint16 {
	var out []uint16
	for _, s := range gpus {
		if s.Key == g.Key {
			out = append(out, s.deviceIDs...)
		}
	}
	return out
}
