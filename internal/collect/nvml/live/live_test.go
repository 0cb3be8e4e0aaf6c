//go:build cgo

package live

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
)

func busID(s string) [32]int8 {
	var b [32]int8
	for i := 0; i < len(s) && i < 31; i++ {
		b[i] = int8(s[i])
	}
	return b
}

// fakeGPU is a go-nvml mock device with every call the collector makes.
func fakeGPU(bus string, links int, remoteSwitch bool) *mock.Device {
	d := &mock.Device{}
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) { return gonvml.PciInfo{BusId: busID(bus)}, gonvml.SUCCESS }
	d.GetUUIDFunc = func() (string, gonvml.Return) { return "GPU-" + bus, gonvml.SUCCESS }
	d.GetNameFunc = func() (string, gonvml.Return) { return "NVIDIA H100 80GB HBM3", gonvml.SUCCESS }
	d.GetSerialFunc = func() (string, gonvml.Return) { return "", gonvml.ERROR_NOT_SUPPORTED }
	d.GetArchitectureFunc = func() (gonvml.DeviceArchitecture, gonvml.Return) { return gonvml.DEVICE_ARCH_HOPPER, gonvml.SUCCESS }
	d.GetMinorNumberFunc = func() (int, gonvml.Return) { return 0, gonvml.SUCCESS }
	d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{Total: 80 << 30}, gonvml.SUCCESS }
	d.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	d.GetPersistenceModeFunc = func() (gonvml.EnableState, gonvml.Return) { return gonvml.FEATURE_ENABLED, gonvml.SUCCESS }
	d.GetMigModeFunc = func() (int, int, gonvml.Return) { return 0, 0, gonvml.SUCCESS }
	d.GetEccModeFunc = func() (gonvml.EnableState, gonvml.EnableState, gonvml.Return) {
		return gonvml.FEATURE_ENABLED, gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(et gonvml.MemoryErrorType, ct gonvml.EccCounterType) (uint64, gonvml.Return) {
		switch {
		case et == gonvml.MEMORY_ERROR_TYPE_UNCORRECTED && ct == gonvml.AGGREGATE_ECC:
			return 3, gonvml.SUCCESS
		case et == gonvml.MEMORY_ERROR_TYPE_CORRECTED && ct == gonvml.VOLATILE_ECC:
			return 7, gonvml.SUCCESS // the burn-in's corrected rate reads this one
		}
		return 0, gonvml.SUCCESS
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) { return 1, 2, true, false, gonvml.SUCCESS }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) {
		return gonvml.ClocksEventReasonGpuIdle | gonvml.ClocksThrottleReasonHwSlowdown, gonvml.SUCCESS
	}
	d.GetMaxPcieLinkGenerationFunc = func() (int, gonvml.Return) { return 5, gonvml.SUCCESS }
	d.GetCurrPcieLinkGenerationFunc = func() (int, gonvml.Return) { return 1, gonvml.SUCCESS }
	d.GetMaxPcieLinkWidthFunc = func() (int, gonvml.Return) { return 16, gonvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, gonvml.Return) { return 16, gonvml.SUCCESS }
	d.GetPcieReplayCounterFunc = func() (int, gonvml.Return) { return 0, gonvml.SUCCESS }
	d.GetClockInfoFunc = func(gonvml.ClockType) (uint32, gonvml.Return) { return 1980, gonvml.SUCCESS }
	d.GetMaxClockInfoFunc = func(gonvml.ClockType) (uint32, gonvml.Return) { return 1980, gonvml.SUCCESS }
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 512345, gonvml.SUCCESS }
	d.GetEnforcedPowerLimitFunc = func() (uint32, gonvml.Return) { return 700000, gonvml.SUCCESS }
	d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
		if l >= links {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		if l == links-1 {
			return gonvml.FEATURE_DISABLED, gonvml.SUCCESS // one link down
		}
		return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	}
	d.GetNvLinkVersionFunc = func(l int) (uint32, gonvml.Return) { return 4, gonvml.SUCCESS }
	d.GetNvLinkRemotePciInfoFunc = func(l int) (gonvml.PciInfo, gonvml.Return) {
		return gonvml.PciInfo{BusId: busID("00000000:FF:FF.0")}, gonvml.SUCCESS
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
		if remoteSwitch {
			return gonvml.NVLINK_DEVICE_TYPE_SWITCH, gonvml.SUCCESS
		}
		return gonvml.NVLINK_DEVICE_TYPE_GPU, gonvml.SUCCESS
	}
	d.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) {
		return gonvml.GpuFabricInfo{State: gonvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(gonvml.SUCCESS)}, gonvml.SUCCESS
	}
	return d
}

func fakeLib(devs ...*mock.Device) *mock.Interface {
	return &mock.Interface{
		InitFunc:                       func() gonvml.Return { return gonvml.SUCCESS },
		ShutdownFunc:                   func() gonvml.Return { return gonvml.SUCCESS },
		ErrorStringFunc:                func(r gonvml.Return) string { return "error " + string(rune('0'+int(r)%10)) },
		SystemGetDriverVersionFunc:     func() (string, gonvml.Return) { return "580.95.05", gonvml.SUCCESS },
		SystemGetNVMLVersionFunc:       func() (string, gonvml.Return) { return "13.580.95.05", gonvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) { return 13000, gonvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, gonvml.Return) { return len(devs), gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc:     func(i int) (gonvml.Device, gonvml.Return) { return devs[i], gonvml.SUCCESS },
		DeviceGetP2PStatusFunc: func(a, b gonvml.Device, i gonvml.GpuP2PCapsIndex) (gonvml.GpuP2PStatus, gonvml.Return) {
			if i == gonvml.P2P_CAPS_INDEX_ATOMICS {
				return gonvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED, gonvml.SUCCESS
			}
			return gonvml.P2P_STATUS_OK, gonvml.SUCCESS
		},
	}
}

func TestCollectThroughMock(t *testing.T) {
	lib := fakeLib(fakeGPU("00000000:18:00.0", 18, true), fakeGPU("00000000:2A:00.0", 18, true))
	f, err := New(WithLibrary(lib)).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Errors) != 0 {
		t.Errorf("errors: %v", f.Errors)
	}
	if f.DriverVersion != "580.95.05" || f.CUDADriverVersion != "13.0" || len(f.GPUs) != 2 {
		t.Fatalf("facts = %+v", f)
	}
	g := f.GPUs[1]
	if g.BusID != "0000:2a:00.0" || g.Architecture != "Hopper" || *g.MemoryMiB != 80<<10 || g.NUMANode != nil {
		t.Errorf("gpu = %+v", g)
	}
	if *g.ECC.AggregateUncorrected != 3 || g.ECC.VolatileCorrected == nil || *g.ECC.VolatileCorrected != 7 || *g.Remapped.Uncorrectable != 2 || !*g.Remapped.Pending || *g.Remapped.Failure {
		t.Errorf("ecc/remap = %+v %+v", g.ECC, g.Remapped)
	}
	// Clock and power read; a sensor the GPU does not have stays unknown.
	if sn := g.Sensors; sn.SMClockMHz == nil || *sn.SMClockMHz != 1980 || sn.PowerW == nil || *sn.PowerW != 512.345 || *sn.PowerLimitW != 700 || sn.TempC != nil {
		t.Errorf("sensors = %+v", sn)
	}
	if d := cmp.Diff([]string{"gpu_idle", "hw_slowdown"}, g.ClockEvents); d != "" {
		t.Errorf("clock events: %s", d)
	}
	if !g.NVLinkQueried || len(g.NVLinks) != 18 {
		t.Fatalf("nvlinks = %d (queried %v)", len(g.NVLinks), g.NVLinkQueried)
	}
	active := 0
	for _, l := range g.NVLinks {
		if l.Active {
			active++
			if l.RemoteType != "nvswitch" || l.Version != 4 || l.RemoteBusID != "00000000:ff:ff.0" {
				t.Errorf("link %+v", l)
			}
		}
	}
	if active != 17 {
		t.Errorf("active links = %d, want 17", active)
	}
	if len(f.P2P) != 2 || f.P2P[0].Read != gpu.P2POK || f.P2P[0].Atomics != gpu.P2PChipsetNotSupported {
		t.Errorf("p2p = %+v", f.P2P)
	}
	if g.Fabric.State != "completed" || g.Fabric.Status != "success" {
		t.Errorf("fabric = %+v", g.Fabric)
	}
}

// TestCollectHungCall: a call that never returns becomes an error within
// the deadline, and nothing else is attempted on the wedged driver.
func TestCollectHungCall(t *testing.T) {
	d := fakeGPU("00000000:18:00.0", 18, true)
	block := make(chan struct{})
	defer close(block)
	d.GetNvLinkStateFunc = func(int) (gonvml.EnableState, gonvml.Return) {
		<-block
		return 0, gonvml.SUCCESS
	}
	start := time.Now()
	f, err := New(WithLibrary(fakeLib(d)), WithCallTimeout(50*time.Millisecond)).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("collect took %s with a hung call", time.Since(start))
	}
	joined := strings.Join(f.Errors, "\n")
	if !strings.Contains(joined, "nvmlDeviceGetNvLinkState(0): no answer within 50ms") || !strings.Contains(joined, "not attempted") {
		t.Errorf("errors = %v", f.Errors)
	}
	if f.GPUs[0].NVLinkQueried {
		t.Error("NVLink marked as queried although the call hung")
	}
}

func TestCollectNoLibrary(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }}
	_, err := New(WithLibrary(lib), WithoutSMIFallback()).Collect(context.Background())
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("err = %v", err)
	}
}

// A driver that reports a GPU count no host has (or a negative one, which
// made the collector panic) is an error, not a loop over it.
func TestLiveGPUCountBounded(t *testing.T) {
	for _, n := range []int{-1, gpu.MaxGPUs + 1, 1 << 30} {
		lib := fakeLib()
		lib.DeviceGetCountFunc = func() (int, gonvml.Return) { return n, gonvml.SUCCESS }
		if _, err := New(WithLibrary(lib)).Collect(t.Context()); err == nil || !strings.Contains(err.Error(), "GPUs, want 0 to") {
			t.Errorf("count %d: %v", n, err)
		}
	}
}
