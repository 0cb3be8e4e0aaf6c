package analyze_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

// benchSamples is one realistic sample per kind; BenchmarkReaders repeats
// each to 32 MiB (docs/performance.md gives the 1 GB measurement).
var benchSamples = map[string]string{
	"nvidia-smi-topo": "smitopo/testdata/h200x8-10nic-gpu3-triple-pix-tabs.txt",
	"dcgmi":           "dcgmi/testdata/dcgmi-diag-r2-aws-p4de-a100-dcgm333.txt",
	"nvbandwidth":     "nvbandwidth/testdata/nvbandwidth-v08-4x-t4-pcie-gen3-d2d-ce-sm.txt",
	"perftest":        "perftest/testdata/k8s-cx6-ib-write-bw-host-all-sizes-98g.txt",
	"nccl-topo":       "nccltopo/testdata/azure-ndv2-v100-topo.txt",
	"nccl-tests":      "nccltests/testdata/dgxc-h100-1node-allreduce-nvls-480.txt",
	"nccl-log":        "ncclog/testdata/synthetic-2node-ib-no-gdr.txt",
}

// BenchmarkReaders reads 32 MiB of each kind (one sample repeated): the
// MB/s column is the reader's speed.
func BenchmarkReaders(b *testing.B) {
	for _, rd := range analyze.Readers() {
		b.Run(rd.Kind(), func(b *testing.B) {
			raw, err := os.ReadFile(benchSamples[rd.Kind()])
			if err != nil {
				b.Fatal(err)
			}
			body, _ := readertest.CorpusBody(raw)
			var big bytes.Buffer
			for big.Len() < 32<<20 {
				big.Write(body)
				big.WriteByte('\n')
			}
			b.SetBytes(int64(big.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := analyze.Read("big", bytes.NewReader(big.Bytes()), rd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
