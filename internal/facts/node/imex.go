package node

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// IMEX is the node's IMEX daemon (the service that lets the GPUs of a
// multi-node NVLink domain, a GB200/GB300 NVL72 rack, map each other's
// memory) as collection found it.
type IMEX struct {
	// Service is systemctl is-active nvidia-imex.
	Service Text
	// Status is nvidia-imex-ctl -N: the domain as this node's daemon sees
	// it (ParseIMEXStatus).
	Status Text
	// Channels lists /dev/nvidia-caps-imex-channels: CUDA needs a channel
	// device (channel0) to import memory from another node.
	Channels Listing
}

// IMEXDomain is what nvidia-imex-ctl -N printed.
type IMEXDomain struct {
	Nodes []IMEXNode
	// NotConnected are the cells of the connectivity table other than C,
	// "FROM->TO STATE" (STATE as the legend writes it: N, R, D, I, A, !V!,
	// !M!).
	NotConnected []string
	// Cells counts the table's cells read.
	Cells int
	// State is the "Domain State:" value (UP, DEGRADED, DOWN, ...); ""
	// when the output has none.
	State string
}

// IMEXNode is one "Node #N - ADDR - STATE [- Version: V]" line.
type IMEXNode struct {
	Index   int
	Address string
	State   string
	Version string
	Line    int
}

var (
	reIMEXNode  = regexp.MustCompile(`^Node #(\d+)\s+-\s+(\S+)\s+-\s+(\S+)(?:\s+-\s+Version:\s*(\S+))?`)
	reIMEXTable = regexp.MustCompile(`^\s*Nodes From\\To\s+(.*)$`)
)

// ParseIMEXStatus reads nvidia-imex-ctl -N: the node list, the
// connectivity table and the domain state. An output without a node list
// and without a domain state is an error naming what is missing.
func ParseIMEXStatus(s string) (*IMEXDomain, error) {
	d := &IMEXDomain{}
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	var cols []string
	for i, raw := range lines {
		line := strings.TrimRight(raw, " \t")
		if m := reIMEXNode.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			d.Nodes = append(d.Nodes, IMEXNode{Index: n, Address: m[2], State: m[3], Version: m[4], Line: i + 1})
			continue
		}
		if m := reIMEXTable.FindStringSubmatch(line); m != nil {
			cols = strings.Fields(m[1])
			continue
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Domain State:"); ok {
			d.State = strings.TrimSpace(v)
			cols = nil
			continue
		}
		if cols != nil {
			f := strings.Fields(line)
			if len(f) != len(cols)+1 {
				cols = nil // the table ended
				continue
			}
			for j, cell := range f[1:] {
				d.Cells++
				if cell != "C" {
					d.NotConnected = append(d.NotConnected, fmt.Sprintf("%s->%s %s", f[0], cols[j], cell))
				}
			}
		}
	}
	if len(d.Nodes) == 0 && d.State == "" {
		return d, fmt.Errorf("no \"Node #N\" line and no \"Domain State:\" line: not nvidia-imex-ctl -N output")
	}
	return d, nil
}
