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

// BenchmarkTinyTables reads 32 MiB of one-row nccl-tests tables (review
// D3's input): every line starts a test or is its header or row.
func BenchmarkTinyTables(b *testing.B) {
	table := "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"           8             2     float     sum      -1    35.06    0.00    0.00      0    34.83    0.00    0.00      0\n"
	in := bytes.Repeat([]byte(table), (32<<20)/len(table))
	rd := analyze.Readers()[5]
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := analyze.Read("tiny", bytes.NewReader(in), rd); err != nil {
			b.Fatal(err)
		}
	}
}
