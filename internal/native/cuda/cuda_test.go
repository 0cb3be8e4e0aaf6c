package cuda_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

func TestFakeRuntime(t *testing.T) {
	path := fakelib.CUDART(t)
	t.Setenv("FAKECUDA_VERSION", "12080")
	t.Setenv("FAKECUDA_DEVICES", "2")
	rt, err := cuda.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rv, dv, err := rt.Versions(ctx)
	if err != nil || rv != "12.8" || dv != "13.0" {
		t.Errorf("versions = %q %q %v", rv, dv, err)
	}
	n, err := rt.DeviceCount(ctx)
	if err != nil || n != 2 {
		t.Errorf("count = %d, %v", n, err)
	}
	bus, err := rt.PCIBusID(ctx, 1)
	if err != nil || bus != "0000:19:00.0" {
		t.Errorf("bus = %q, %v", bus, err)
	}
	_, err = rt.PCIBusID(ctx, 7)
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Name != "cudaErrorInvalidDevice" || !strings.Contains(err.Error(), "invalid device ordinal") {
		t.Errorf("bad device err = %v", err)
	}
	t.Setenv("FAKECUDA_DEVICES", "0")
	if _, err := rt.DeviceCount(ctx); err == nil || !strings.Contains(err.Error(), "no CUDA-capable device") {
		t.Errorf("no device err = %v", err)
	}
}

func TestMissingRuntimeSaysWhereItLooked(t *testing.T) {
	t.Setenv("CUDA_HOME", t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Setenv("GDRCHECK_CUDART", "")
	_, err := cuda.Open("")
	if !errors.Is(err, dl.ErrNotFound) {
		t.Skipf("a CUDA runtime is installed here (%v)", err)
	}
	for _, want := range []string{"libcudart.so.13", "libcudart.so.12", "/usr/local/cuda/lib64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not list %s: %v", want, err)
		}
	}
	// A path the user names is the only one tried.
	named := t.TempDir() + "/libcudart.so.13"
	_, err = cuda.Open(named)
	var nf *dl.NotFoundError
	if !errors.As(err, &nf) || len(nf.Searched) != 1 || !strings.HasPrefix(nf.Searched[0], named) {
		t.Errorf("named path: %v", err)
	}
}

func TestNotACudaRuntime(t *testing.T) {
	_, err := cuda.Open(fakelib.NCCL(t))
	if err == nil || !strings.Contains(err.Error(), "missing entry point") {
		t.Errorf("err = %v", err)
	}
}
