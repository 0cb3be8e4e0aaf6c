package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/ansitest"
)

// What the libraries, the driver and NCCL's logs say (versions, paths,
// device names, errors, NCCL's summary lines) reaches the text views
// escaped (review S3).
func TestTextViewsEscapeWhatTheLibrariesSay(t *testing.T) {
	p := ansitest.Payload
	devs := []Device{{CUDA: 0, BusID: "0000:1b:00.0" + p, Name: "NVIDIA H200" + p}}
	judged := []result.Result{{ID: "bench.x", Status: result.Fail, Subject: "GPU0" + p, Message: "slow" + p}}
	var b strings.Builder
	nt := NCCLText{W: &b}
	nt.Header(&NCCLReport{NCCL: "2.21" + p, NCCLPath: "/lib/libnccl.so" + p, CUDARuntime: "12.4" + p, CUDADriver: "12.4" + p, Devices: devs}, NCCLConfig{}, "node"+p, 1)
	nt.Note("note" + p)
	nt.Footers([]NCCLResult{{Error: "unhandled system error" + p}}, nil)
	nt.Footers(nil, errors.New("ncclCommInitAll"+p))
	nt.Trailer(judged, &NCCLEvidence{Summary: []string{"NET/IB" + p}}, "/out"+p)
	WriteCopyText(&b, &CopyReport{CUDARuntime: "12.4" + p, Devices: devs,
		Measurements: []CopyResult{{Test: CopyH2DPinned, Peer: -1, Valid: true, Note: "n" + p}, {Test: CopyH2DPinned, Peer: -1, Error: "cudaError" + p}}}, CopyConfig{}, judged)
	out := b.String()
	ansitest.Clean(t, "bench text", out)
	for _, v := range []string{"NCCL 2.21", "/lib/libnccl.so", "on node", "0000:1b:00.0", "NVIDIA H200", "#\n# note", "# ERROR: unhandled system error",
		"# ERROR: ncclCommInitAll", "# NCCL: NET/IB", "logs: /out", "GPU0", "cudaError", "slow"} {
		if want := v + `X\x1b]0;PWNED-TITLE\a\x1b[2J`; !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}
