// Command gdrcheck commissions GPU nodes and clusters: it discovers the
// PCIe/NVLink/NIC topology, checks every GPU Direct RDMA prerequisite,
// benchmarks NCCL and copies natively, and judges the results against what
// the hardware should reach.
package main

import (
	"os"

	"github.com/gdrcheck/gdrcheck/internal/cli"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = ""
	commit  = ""
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr, cli.BuildInfo{Version: version, Commit: commit}))
}
