//go:build cgo

package libs

import (
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

func TestMain(m *testing.M) { os.Exit(fakelib.RunTests(m)) }

// Probe asks the runtime it is given and loads none of its own: with the
// search pointed at nothing, the open runtime is still reported, while a
// probe without one says the library is missing.
func TestProbeUsesTheOpenRuntime(t *testing.T) {
	t.Setenv("GDRCHECK_NCCL", fakelib.NCCL(t))
	rt, err := cuda.Open(fakelib.CUDART(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GDRCHECK_CUDART", "/nonexistent/libcudart.so")
	got := Probe(t.Context(), rt)
	if !got.CUDARuntime.Loaded || got.CUDARuntime.Version != "13.0" || got.CUDARuntime.Path != rt.Path || !got.NCCL.Loaded {
		t.Errorf("with an open runtime: %+v", got)
	}
	if own := Probe(t.Context(), nil); own.CUDARuntime.Loaded || own.CUDARuntime.Error == "" {
		t.Errorf("without one, the probe loads its own: %+v", own.CUDARuntime)
	}
}
