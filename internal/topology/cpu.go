package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// CPU is what the host's processors are, as NCCL names them in a topology
// file's <cpu> element: the architecture ("x86_64", "arm64", "ppc64") and,
// on x86, the vendor string and the family and model numbers.
type CPU struct {
	Arch   string `json:"arch"`
	Vendor string `json:"vendor,omitempty"`
	Family int    `json:"family,omitempty"`
	Model  int    `json:"model,omitempty"`
}

// ParseCPUInfo reads the first processor of /proc/cpuinfo. x86 kernels
// write vendor_id, "cpu family" and model; arm64 kernels "CPU
// implementer"; POWER kernels "cpu : POWER9" and "platform". Anything else
// is an error naming the line it stopped at.
func ParseCPUInfo(s string) (*CPU, error) {
	var c CPU
	var family, model string
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			if strings.TrimSpace(line) == "" && (c.Vendor != "" || c.Arch != "") {
				break // the end of the first processor's block
			}
			continue
		}
		switch k {
		case "vendor_id":
			c.Arch, c.Vendor = "x86_64", v
		case "cpu family":
			family = v
		case "model":
			model = v
		case "CPU implementer":
			c.Arch = "arm64"
		case "cpu":
			if strings.HasPrefix(strings.ToUpper(v), "POWER") {
				c.Arch = "ppc64"
			}
		}
	}
	switch c.Arch {
	case "":
		return nil, fmt.Errorf("no vendor_id, CPU implementer or POWER cpu line: not a cpuinfo NCCL can name")
	case "x86_64":
		f, err := strconv.Atoi(family)
		if err != nil {
			return nil, fmt.Errorf(`"cpu family" %q: not a number`, family)
		}
		m, err := strconv.Atoi(model)
		if err != nil {
			return nil, fmt.Errorf(`"model" %q: not a number`, model)
		}
		c.Family, c.Model = f, m
	}
	return &c, nil
}
