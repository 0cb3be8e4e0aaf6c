package model

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// GPUSpec is what a GPU model should do, from its datasheet.
type GPUSpec struct {
	Key  string `json:"key"`  // h100-sxm
	Name string `json:"name"` // NVIDIA H100 SXM5 80GB
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

// Datasheets.
const (
	dsH100  = "NVIDIA H100 Tensor Core GPU datasheet, https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
	dsH200  = "NVIDIA H200 Tensor Core GPU product page/datasheet, https://www.nvidia.com/en-us/data-center/h200/"
	dsH800  = "H800: NVLink 400 GB/s bidirectional, 8 links (nominal 200 GB/s per direction per DeepSeek, deepseek-ai/DeepEP#16); memory as H100 SXM (HBM3, 3.35 TB/s)"
	dsA100  = "NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
	dsB200  = "NVIDIA DGX B200 datasheet (8x B200: 64 TB/s HBM3e, NVLink 5 1.8 TB/s per GPU), https://resources.nvidia.com/en-us-dgx-systems/dgxb200-datasheet"
	dsL40S  = "NVIDIA L40S datasheet, https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"
	dsR6000 = "NVIDIA RTX 6000 Ada Generation datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/rtx-6000/proviz-print-rtx6000-datasheet-web-2504660.pdf"
	dsV100  = "NVIDIA V100 Tensor Core GPU datasheet, https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
	dsT4    = "NVIDIA T4 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf"
	dsA6000 = "NVIDIA RTX A6000 datasheet (NVLink bridge 112.5 GB/s bidirectional), https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/quadro-product-literature/proviz-print-nvidia-rtx-a6000-datasheet-us-nvidia-1454980-r9-web%20(1).pdf"
	dsA40   = "NVIDIA A40 datasheet (NVLink bridge 112.5 GB/s bidirectional), https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf"
)

// gpuSpecs is the GPU table, most specific match first. Device IDs are
// only those confirmed by real captures in testdata/ and the corpus.
var gpuSpecs = [...]GPUSpec{
	{Key: "h100-sxm", Name: "NVIDIA H100 SXM5 80GB", Aliases: []string{"h100"}, Arch: "Hopper", ComputeCap: 90, FormFactor: "SXM",
		MemType: "HBM3", MemGBps: 3350, NVLinkGen: 4, NVLinks: 18, NVLinkLinkGBps: 25, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH100 + " (H100 SXM: 3.35 TB/s, NVLink 900 GB/s, PCIe Gen5 128 GB/s)",
		match: []string{"h100", "sxm*"}, deviceIDs: []uint16{0x2330}},
	{Key: "h100-nvl", Name: "NVIDIA H100 NVL 94GB", Arch: "Hopper", ComputeCap: 90, FormFactor: "PCIe",
		MemType: "HBM3", MemGBps: 3900, NVLinkGen: 4, NVLinks: 12, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH100 + " (H100 NVL: 3.9 TB/s, NVLink bridge 600 GB/s)",
		match: []string{"h100", "nvl"}},
	{Key: "h100-pcie", Name: "NVIDIA H100 PCIe 80GB", Arch: "Hopper", ComputeCap: 90, FormFactor: "PCIe",
		MemType: "HBM2e", MemGBps: 2000, NVLinkGen: 4, NVLinks: 12, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH100 + " (H100 PCIe: 2 TB/s, NVLink bridge 600 GB/s)",
		match: []string{"h100", "pcie"}},
	// "NVIDIA H100 80GB HBM3" is how the driver names the SXM5 part.
	{Key: "h100-sxm", match: []string{"h100", "hbm3"}},
	{Key: "h200-nvl", Name: "NVIDIA H200 NVL 141GB", Arch: "Hopper", ComputeCap: 90, FormFactor: "PCIe",
		MemType: "HBM3e", MemGBps: 4800, NVLinkGen: 4, NVLinks: 18, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH200 + " (H200 NVL: 4.8 TB/s, 2- or 4-way NVLink bridge 900 GB/s)",
		match: []string{"h200", "nvl"}},
	{Key: "h200-sxm", Name: "NVIDIA H200 SXM 141GB", Aliases: []string{"h200"}, Arch: "Hopper", ComputeCap: 90, FormFactor: "SXM",
		MemType: "HBM3e", MemGBps: 4800, NVLinkGen: 4, NVLinks: 18, NVLinkLinkGBps: 25, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH200 + " (H200 SXM: 4.8 TB/s, NVLink 900 GB/s, PCIe Gen5 128 GB/s)",
		match: []string{"h200"}, deviceIDs: []uint16{0x2335}},
	{Key: "h800-sxm", Name: "NVIDIA H800 SXM5 80GB", Aliases: []string{"h800"}, Arch: "Hopper", ComputeCap: 90, FormFactor: "SXM",
		MemType: "HBM3", MemGBps: 3350, NVLinkGen: 4, NVLinks: 8, NVLinkLinkGBps: 25, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsH800,
		match: []string{"h800"}},
	{Key: "a100-sxm-80gb", Name: "NVIDIA A100 SXM4 80GB", Aliases: []string{"a100", "a100-sxm"}, Arch: "Ampere", ComputeCap: 80, FormFactor: "SXM",
		MemType: "HBM2e", MemGBps: 2039, NVLinkGen: 3, NVLinks: 12, NVLinkLinkGBps: 25, NVSwitchBoard: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA100 + " (A100 80GB SXM: 2039 GB/s, NVLink 600 GB/s, PCIe Gen4 64 GB/s)",
		match: []string{"a100", "sxm*", "80gb"}, deviceIDs: []uint16{0x20b2}},
	{Key: "a100-sxm-40gb", Name: "NVIDIA A100 SXM4 40GB", Aliases: []string{"a100-40gb"}, Arch: "Ampere", ComputeCap: 80, FormFactor: "SXM",
		MemType: "HBM2", MemGBps: 1555, NVLinkGen: 3, NVLinks: 12, NVLinkLinkGBps: 25, NVSwitchBoard: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA100 + " (A100 40GB SXM: 1555 GB/s, NVLink 600 GB/s)",
		match: []string{"a100", "sxm*"}, deviceIDs: []uint16{0x20b0}},
	{Key: "a100-pcie-80gb", Name: "NVIDIA A100 PCIe 80GB", Aliases: []string{"a100-pcie"}, Arch: "Ampere", ComputeCap: 80, FormFactor: "PCIe",
		MemType: "HBM2e", MemGBps: 1935, NVLinkGen: 3, NVLinks: 12, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA100 + " (A100 80GB PCIe: 1935 GB/s, NVLink bridge for 2 GPUs 600 GB/s)",
		match: []string{"a100", "80gb", "pcie"}, deviceIDs: []uint16{0x20b5}},
	{Key: "a100-pcie-40gb", Name: "NVIDIA A100 PCIe 40GB", Arch: "Ampere", ComputeCap: 80, FormFactor: "PCIe",
		MemType: "HBM2", MemGBps: 1555, NVLinkGen: 3, NVLinks: 12, NVLinkLinkGBps: 25, NVLinkBridge: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA100 + " (A100 40GB PCIe: 1555 GB/s, NVLink bridge 600 GB/s)",
		match: []string{"a100", "pcie"}},
	{Key: "b200", Name: "NVIDIA B200", Arch: "Blackwell", ComputeCap: 100, FormFactor: "SXM",
		MemType: "HBM3e", MemGBps: 8000, NVLinkGen: 5, NVLinks: 18, NVLinkLinkGBps: 50, NVSwitchBoard: true, NVLS: true,
		PCIeGen: 5, PCIeWidth: 16, Source: dsB200,
		match: []string{"b200"}, deviceIDs: []uint16{0x2901}},
	{Key: "l40s", Name: "NVIDIA L40S", Arch: "Ada", ComputeCap: 89, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 864, PCIeGen: 4, PCIeWidth: 16, Source: dsL40S + " (864 GB/s, PCIe Gen4 x16, no NVLink)",
		match: []string{"l40s"}, deviceIDs: []uint16{0x26b9}},
	{Key: "rtx6000-ada", Name: "NVIDIA RTX 6000 Ada Generation", Aliases: []string{"rtx6000ada"}, Arch: "Ada", ComputeCap: 89, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 960, PCIeGen: 4, PCIeWidth: 16, Source: dsR6000 + " (960 GB/s, PCIe Gen4 x16, no NVLink)",
		match: []string{"rtx", "6000", "ada"}, deviceIDs: []uint16{0x26b1}},
	{Key: "rtx-a6000", Name: "NVIDIA RTX A6000", Aliases: []string{"a6000"}, Arch: "Ampere", ComputeCap: 86, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 768, NVLinkGen: 3, NVLinks: 4, NVLinkLinkGBps: 14.0625, NVLinkBridge: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA6000,
		match: []string{"rtx", "a6000"}},
	{Key: "a40", Name: "NVIDIA A40", Arch: "Ampere", ComputeCap: 86, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 696, NVLinkGen: 3, NVLinks: 4, NVLinkLinkGBps: 14.0625, NVLinkBridge: true,
		PCIeGen: 4, PCIeWidth: 16, Source: dsA40,
		match: []string{"a40"}},
	{Key: "v100-sxm2", Name: "NVIDIA V100 SXM2", Aliases: []string{"v100"}, Arch: "Volta", ComputeCap: 70, FormFactor: "SXM",
		MemType: "HBM2", MemGBps: 900, NVLinkGen: 2, NVLinks: 6, NVLinkLinkGBps: 25,
		PCIeGen: 3, PCIeWidth: 16, Source: dsV100 + " (SXM2: 900 GB/s, NVLink 300 GB/s, PCIe 32 GB/s)",
		match: []string{"v100", "sxm*"}, deviceIDs: []uint16{0x1db5}},
	{Key: "v100-pcie", Name: "NVIDIA V100 PCIe", Arch: "Volta", ComputeCap: 70, FormFactor: "PCIe",
		MemType: "HBM2", MemGBps: 900, PCIeGen: 3, PCIeWidth: 16, Source: dsV100 + " (PCIe: 900 GB/s, PCIe 32 GB/s)",
		match: []string{"v100"}},
	{Key: "t4", Name: "NVIDIA T4", Arch: "Turing", ComputeCap: 75, FormFactor: "PCIe",
		MemType: "GDDR6", MemGBps: 320, PCIeGen: 3, PCIeWidth: 16, Source: dsT4 + " (320 GB/s, PCIe Gen3 x16)",
		match: []string{"t4"}},
}

// Specs lists the GPU table, one entry per model, by key.
func Specs() []GPUSpec {
	seen := map[string]bool{}
	var out []GPUSpec
	for _, s := range gpuSpecs {
		if s.Name == "" || seen[s.Key] {
			continue
		}
		seen[s.Key] = true
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// specByKey returns the full entry of a key.
func specByKey(key string) (GPUSpec, bool) {
	for _, s := range gpuSpecs {
		if s.Key == key && s.Name != "" {
			return s, true
		}
	}
	return GPUSpec{}, false
}

// LookupSpec finds a GPU by a --gpu name: a key ("h100-sxm"), an alias
// ("h100") or a driver name ("NVIDIA H100 80GB HBM3").
func LookupSpec(name string) (GPUSpec, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, s := range gpuSpecs {
		if s.Name == "" {
			continue
		}
		if n == s.Key || slices.Contains(s.Aliases, n) {
			return s, nil
		}
	}
	if s, ok := SpecForName(name); ok {
		return s, nil
	}
	var keys []string
	for _, s := range Specs() {
		keys = append(keys, s.Key)
	}
	return GPUSpec{}, fmt.Errorf("GPU %q: not in the model's table; known: %s", name, strings.Join(keys, ", "))
}

// SpecForName matches a driver's GPU name ("NVIDIA H100 80GB HBM3",
// "Tesla V100-SXM2-32GB") against the table.
func SpecForName(name string) (GPUSpec, bool) {
	toks := nameTokens(name)
	if len(toks) == 0 {
		return GPUSpec{}, false
	}
	for _, s := range gpuSpecs {
		if len(s.match) > 0 && matchAll(toks, s.match) {
			return specByKey(s.Key)
		}
	}
	return GPUSpec{}, false
}

// SpecForDevice matches an NVIDIA PCI device ID.
func SpecForDevice(id uint16) (GPUSpec, bool) {
	for _, s := range gpuSpecs {
		for _, d := range s.deviceIDs {
			if d == id {
				return specByKey(s.Key)
			}
		}
	}
	return GPUSpec{}, false
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
