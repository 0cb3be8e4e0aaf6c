//go:build cgo

package live

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
	d.GetNvLinkErrorCounterFunc = func(l int, c gonvml.NvLinkErrorCounter) (uint64, gonvml.Return) {
		return uint64(10*l) + uint64(c), gonvml.SUCCESS
	}
	d.GetFieldValuesFunc = fakeFieldValues(nil)
	d.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) {
		return gonvml.GpuFabricInfo{State: gonvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(gonvml.SUCCESS)}, gonvml.SUCCESS
	}
	return d
}

// fakeFieldValues answers NVML field value requests as a Hopper GPU does:
// the throughput counters (TX = 1000 + link KiB, RX = 2000 + link, as the
// driver's unsigned long long) and NOT_SUPPORTED for NVLink 5's; refuse
// names fields answered NOT_SUPPORTED too.
func fakeFieldValues(refuse map[uint32]bool) func([]gonvml.FieldValue) gonvml.Return {
	return func(vs []gonvml.FieldValue) gonvml.Return {
		for i := range vs {
			v := &vs[i]
			var x uint64
			switch v.FieldId {
			case gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
				x = 1000 + uint64(v.ScopeId)
			case gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
				x = 2000 + uint64(v.ScopeId)
			default:
				v.NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
				continue
			}
			if refuse[v.FieldId] {
				v.NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
				continue
			}
			v.ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
			binary.NativeEndian.PutUint64(v.Value[:], x)
			v.NvmlReturn = uint32(gonvml.SUCCESS)
		}
		return gonvml.SUCCESS
	}
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

// WithSensorsOnly reads what a burn-in reads every 2 s — each GPU's PCI
// address, clocks, power, clock events — and none of the P2P matrix, the
// NVLinks or the memory errors.
func TestCollectSensorsOnly(t *testing.T) {
	lib := fakeLib(fakeGPU("00000000:18:00.0", 18, true), fakeGPU("00000000:2A:00.0", 18, true))
	f, err := New(WithLibrary(lib), WithSensorsOnly()).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.GPUs) != 2 || f.GPUs[1].BusID != "0000:2a:00.0" {
		t.Fatalf("gpus %+v", f.GPUs)
	}
	g := f.GPUs[1]
	if sn := g.Sensors; sn.SMClockMHz == nil || *sn.SMClockMHz != 1980 || sn.PowerW == nil || *sn.PowerW != 512.345 || *sn.PowerLimitW != 700 {
		t.Errorf("sensors = %+v", sn)
	}
	if d := cmp.Diff([]string{"gpu_idle", "hw_slowdown"}, g.ClockEvents); d != "" {
		t.Errorf("clock events: %s", d)
	}
	if len(f.P2P) != 0 || g.NVLinkQueried || g.ECC.Current != nil || g.UUID != "" {
		t.Errorf("more than the sensors read: p2p %d, nvlink %v, ecc %+v, uuid %q", len(f.P2P), g.NVLinkQueried, g.ECC, g.UUID)
	}
	if n := len(lib.DeviceGetP2PStatusCalls()); n != 0 {
		t.Errorf("%d P2P calls", n)
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

// TestCollectNVLinkCounters: every active link's error counters
// (nvmlDeviceGetNvLinkErrorCounter) and throughput (field values, scopeId =
// link) are read; what the driver refuses is missing with its reason,
// never 0; an inactive link has no counters; a hung call leaves the rest
// missing, and the collection returns.
func TestCollectNVLinkCounters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(d *mock.Device) (unblock func())
		check func(t *testing.T, nc []gpu.NVLinkCounters)
	}{
		{name: "hopper", check: func(t *testing.T, nc []gpu.NVLinkCounters) {
			if len(nc) != 17 { // link 17 is down
				t.Fatalf("%d links with counters, want the 17 active ones", len(nc))
			}
			l := nc[3]
			want := map[string]uint64{gpu.NVLinkCRCFlit: 32, gpu.NVLinkCRCData: 33, gpu.NVLinkReplay: 30, gpu.NVLinkRecovery: 31, gpu.NVLinkTxKiB: 1003, gpu.NVLinkRxKiB: 2003}
			if d := cmp.Diff(want, l.Values); l.Link != 3 || d != "" {
				t.Errorf("link %d values: %s", l.Link, d)
			}
			for _, k := range []string{gpu.NVLinkRecoveryFailed, gpu.NVLinkEffectiveErrors, gpu.NVLinkRecoveryEvents} {
				if !strings.Contains(l.Missing[k], "nvmlDeviceGetFieldValues field") {
					t.Errorf("%s: missing %q, want NVML's refusal", k, l.Missing[k])
				}
			}
		}},
		{name: "a counter refused", setup: func(d *mock.Device) func() {
			d.GetNvLinkErrorCounterFunc = func(l int, c gonvml.NvLinkErrorCounter) (uint64, gonvml.Return) {
				if c == gonvml.NVLINK_ERROR_DL_CRC_DATA {
					return 0, gonvml.ERROR_NOT_SUPPORTED
				}
				return 1, gonvml.SUCCESS
			}
			d.GetFieldValuesFunc = fakeFieldValues(map[uint32]bool{gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX: true})
			return nil
		}, check: func(t *testing.T, nc []gpu.NVLinkCounters) {
			l := nc[0]
			if _, ok := l.Values[gpu.NVLinkCRCData]; ok || !strings.Contains(l.Missing[gpu.NVLinkCRCData], "nvmlDeviceGetNvLinkErrorCounter") {
				t.Errorf("crc data: value %v missing %q", l.Values[gpu.NVLinkCRCData], l.Missing[gpu.NVLinkCRCData])
			}
			if _, ok := l.Values[gpu.NVLinkRxKiB]; ok || l.Missing[gpu.NVLinkRxKiB] == "" {
				t.Errorf("rx: %+v", l)
			}
			if l.Values[gpu.NVLinkTxKiB] != 1000 {
				t.Errorf("tx = %d", l.Values[gpu.NVLinkTxKiB])
			}
		}},
		{name: "the data-link call refused, the scoped field answers", setup: func(d *mock.Device) func() {
			d.GetNvLinkErrorCounterFunc = func(l int, c gonvml.NvLinkErrorCounter) (uint64, gonvml.Return) {
				if c == gonvml.NVLINK_ERROR_DL_REPLAY || c == gonvml.NVLINK_ERROR_DL_RECOVERY {
					return 0, gonvml.ERROR_NOT_SUPPORTED
				}
				return 7, gonvml.SUCCESS
			}
			hopper := fakeFieldValues(nil)
			d.GetFieldValuesFunc = func(vs []gonvml.FieldValue) gonvml.Return {
				r := hopper(vs)
				for i := range vs {
					switch vs[i].FieldId {
					case gonvml.FI_DEV_NVLINK_ERROR_DL_REPLAY:
						vs[i].NvmlReturn, vs[i].ValueType = uint32(gonvml.SUCCESS), uint32(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
						binary.NativeEndian.PutUint64(vs[i].Value[:], 5)
					case gonvml.FI_DEV_NVLINK_ERROR_DL_CRC:
						// Answered, but the data-link call read it first.
						vs[i].NvmlReturn, vs[i].ValueType = uint32(gonvml.SUCCESS), uint32(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
						binary.NativeEndian.PutUint64(vs[i].Value[:], 99)
					}
				}
				return r
			}
			return nil
		}, check: func(t *testing.T, nc []gpu.NVLinkCounters) {
			l := nc[2]
			if l.Values[gpu.NVLinkReplay] != 5 || l.Values[gpu.NVLinkCRCFlit] != 7 {
				t.Errorf("replay %d (want 5, from the field), crc flit %d (want 7, from the data-link call)", l.Values[gpu.NVLinkReplay], l.Values[gpu.NVLinkCRCFlit])
			}
			if _, ok := l.Missing[gpu.NVLinkReplay]; ok {
				t.Errorf("replay read and missing: %q", l.Missing[gpu.NVLinkReplay])
			}
			why := l.Missing[gpu.NVLinkRecovery]
			if _, ok := l.Values[gpu.NVLinkRecovery]; ok || !strings.Contains(why, "nvmlDeviceGetNvLinkErrorCounter: error") || !strings.Contains(why, "; nvmlDeviceGetFieldValues field 162: error") {
				t.Errorf("recovery refused by both: value %v, missing %q", l.Values[gpu.NVLinkRecovery], why)
			}
		}},
		{name: "field values refused as a whole", setup: func(d *mock.Device) func() {
			d.GetFieldValuesFunc = func([]gonvml.FieldValue) gonvml.Return { return gonvml.ERROR_NO_PERMISSION }
			return nil
		}, check: func(t *testing.T, nc []gpu.NVLinkCounters) {
			if _, ok := nc[0].Values[gpu.NVLinkTxKiB]; ok || !strings.Contains(nc[0].Missing[gpu.NVLinkTxKiB], "nvmlDeviceGetFieldValues: error") {
				t.Errorf("tx: %+v", nc[0])
			}
		}},
		{name: "hung field values", setup: func(d *mock.Device) func() {
			block := make(chan struct{})
			d.GetFieldValuesFunc = func([]gonvml.FieldValue) gonvml.Return { <-block; return gonvml.SUCCESS }
			return func() { close(block) }
		}, check: func(t *testing.T, nc []gpu.NVLinkCounters) {
			if !strings.Contains(nc[0].Missing[gpu.NVLinkRxKiB], "no answer within") || nc[0].Values[gpu.NVLinkCRCFlit] != 2 {
				t.Errorf("link 0: %+v", nc[0])
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fakeGPU("00000000:18:00.0", 18, true)
			if tc.setup != nil {
				if unblock := tc.setup(d); unblock != nil {
					defer unblock()
				}
			}
			f, err := New(WithLibrary(fakeLib(d)), WithCallTimeout(100*time.Millisecond)).Collect(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, f.GPUs[0].NVLinkCounters)
		})
	}
}

func TestFieldUint(t *testing.T) {
	fv := func(vt gonvml.ValueType, bits uint64) gonvml.FieldValue {
		v := gonvml.FieldValue{ValueType: uint32(vt)}
		binary.NativeEndian.PutUint64(v.Value[:], bits)
		return v
	}
	for _, tc := range []struct {
		in   gonvml.FieldValue
		want uint64
		err  bool
	}{
		{fv(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG, 1<<40), 1 << 40, false},
		{fv(gonvml.VALUE_TYPE_UNSIGNED_INT, 7), 7, false},
		{fv(gonvml.VALUE_TYPE_SIGNED_LONG_LONG, 9), 9, false},
		{fv(gonvml.VALUE_TYPE_SIGNED_LONG_LONG, ^uint64(0)), 0, true}, // -1
		{fv(gonvml.VALUE_TYPE_DOUBLE, 0x4014000000000000), 5, false},  // 5.0
		{fv(gonvml.VALUE_TYPE_DOUBLE, 0x3ff8000000000000), 0, true},   // 1.5
		{fv(99, 1), 0, true},
	} {
		got, err := fieldUint(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("fieldUint(type %d) = %d, %v; want %d, error %v", tc.in.ValueType, got, err, tc.want, tc.err)
		}
	}
}

// BenchmarkCollectNVLinkCounters is the cost of the NVLink counters on an
// 8-GPU NVSwitch node (18 links each, 17 up) through the mock: the
// deadline guard's own cost per call, not the driver's.
func BenchmarkCollectNVLinkCounters(b *testing.B) {
	for _, links := range []int{1, 18} {
		b.Run(fmt.Sprintf("links=%d", links), func(b *testing.B) {
			var devs []*mock.Device
			for i := range 8 {
				devs = append(devs, fakeGPU(fmt.Sprintf("00000000:%02X:00.0", 0x18+i), links, true))
			}
			lib := fakeLib(devs...)
			lib.DeviceGetP2PStatusFunc = func(a, b gonvml.Device, i gonvml.GpuP2PCapsIndex) (gonvml.GpuP2PStatus, gonvml.Return) {
				return gonvml.P2P_STATUS_OK, gonvml.SUCCESS
			}
			src := New(WithLibrary(lib))
			for b.Loop() {
				if _, err := src.Collect(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
