package nccltests

import (
	"bytes"
	"io"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

// BenchmarkAnalyzeLog reads an NCCL_DEBUG=INFO nccl-tests run (mostly NCCL
// lines, the table at the end), the input this reader shares with ncclog.
func BenchmarkAnalyzeLog(b *testing.B) {
	body := readertest.Body(b, "aws-p5-2node-efa-ofi-gdrdma-full.txt")
	var big bytes.Buffer
	for big.Len() < 32<<20 {
		big.Write(body)
	}
	in := big.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Analyze("big.log", bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
	_ = io.Discard
}
