package app

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// TestRequireLive: "/" and "" name the live host, however "/" is spelt;
// every other root (a directory, an archive) is refused with the one text.
func TestRequireLive(t *testing.T) {
	for _, c := range []struct {
		root string
		live bool
	}{
		{"", true},
		{"/", true},
		{"//", true},
		{"/./", true},
		{"/tmp/..", true},
		{"/tmp", false},
		{"node17.tgz", false},
		{".", false},
	} {
		err := requireLive(c.root)
		if (err == nil) != c.live || isLive(c.root) != c.live {
			t.Errorf("%q: requireLive %v, isLive %v; want live %v", c.root, err, isLive(c.root), c.live)
		}
		var te *ToolError
		if err != nil && (!errors.As(err, &te) || err.Error() != "benchmarks run on the live host only (--root is "+c.root+")") {
			t.Errorf("%q: %v", c.root, err)
		}
	}
}

// liveHost has the two GPUs the fake CUDA runtime reports (bus 18 and 19).
const liveHost = `hostname fakelive
numa 0 0-15
module nvidia
hostbridge pci0000:00 numa=0
  0000:00:01.0 rootport id=8086:2030 gen=5
    0000:18:00.0 gpu id=10de:2335
  0000:00:02.0 rootport id=8086:2030 gen=5
    0000:19:00.0 gpu id=10de:2335
nvml driver=580.95.05 cuda=13.0
nvml-gpu 0000:18:00.0 name="NVIDIA H200"
nvml-gpu 0000:19:00.0 name="NVIDIA H200"
`

// TestOpenGPUsOnTheLiveHost: a benchmark's GPUs open on the live host
// only; there the host is discovered (here the fixture standing for it,
// LiveRoot) and CUDA's devices are mapped to its GPUs by bus id.
func TestOpenGPUsOnTheLiveHost(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "2")
	spec, err := fakehost.Parse("fakelive", strings.NewReader(liveHost))
	if err != nil {
		t.Fatal(err)
	}
	live := fakehost.MaterializeArchive(t, spec)
	o := GPUOptions{CUDART: fakelib.CUDART(t)}
	g, err := OpenGPUs(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if len(g.Devices) != 2 || g.Host == nil || g.name(0) != "NVIDIA H200" || g.GPUs[1] == nil || g.GPUs[1].Address != "0000:19:00.0" {
		t.Errorf("devices %v, host %v, GPU0 %q, GPU1 %+v", g.Devices, g.Host != nil, g.name(0), g.GPUs[1])
	}
	_, err = OpenGPUs(t.Context(), NodeOptions{Root: live, Timeout: time.Minute}, o)
	if err == nil || err.Error() != "benchmarks run on the live host only (--root is "+live+")" {
		t.Errorf("OpenGPUs on a snapshot: %v", err)
	}
}
