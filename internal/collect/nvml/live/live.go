//go:build cgo

package live

import (
	"context"
	"fmt"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/watchdog"
)

// library is the NVML a source asks: go-nvml's binding of the real
// library, or its mock in tests.
type library = gonvml.Interface

// WithLibrary replaces the NVML library (go-nvml's mock in tests).
func WithLibrary(lib gonvml.Interface) Option { return func(o *options) { o.lib = lib } }

func newLive(o options) *live {
	lib := o.lib
	if lib == nil {
		lib = gonvml.New()
	}
	return &live{lib: lib, timeout: o.timeout, sensors: o.sensors}
}

// guard runs NVML calls under a deadline. Once a call hangs, every later
// call fails at once: the hung call still owns the driver lock.
type guard struct {
	timeout time.Duration
	w       *watchdog.Guard
}

func newGuard(timeout time.Duration) *guard {
	return &guard{timeout: timeout, w: watchdog.New(ErrHung)}
}

func (g *guard) do(ctx context.Context, name string, f func()) error {
	return g.w.Do(ctx, watchdog.Call{Name: name, Timeout: g.timeout}, func() error { f(); return nil })
}

// live collects Facts from an NVML implementation (the real library, or
// go-nvml's mock in tests).
type live struct {
	lib     gonvml.Interface
	timeout time.Duration
	sensors bool // WithSensorsOnly
}

func (l *live) Collect(ctx context.Context) (*gpu.Facts, error) {
	g := newGuard(l.timeout)
	f := &gpu.Facts{Source: "nvml", CollectedAt: time.Now().UTC()}
	var ret gonvml.Return
	if err := g.do(ctx, "nvmlInit", func() { ret = l.lib.Init() }); err != nil {
		return nil, err
	}
	if ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
		return nil, fmt.Errorf("%w: not found (no NVIDIA driver on this host, or not on the loader path)", ErrNoLibrary)
	}
	if ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("nvmlInit: %s", l.errString(g, ret))
	}
	defer func() { _ = g.do(context.Background(), "nvmlShutdown", func() { l.lib.Shutdown() }) }()

	c := &collector{l: l, g: g, ctx: ctx, f: f}
	f.DriverVersion, _ = get(c, "nvmlSystemGetDriverVersion", l.lib.SystemGetDriverVersion)
	f.NVMLVersion, _ = get(c, "nvmlSystemGetNVMLVersion", l.lib.SystemGetNVMLVersion)
	if cv, ok := get(c, "nvmlSystemGetCudaDriverVersion", l.lib.SystemGetCudaDriverVersion); ok {
		f.CUDADriverVersion = fmt.Sprintf("%d.%d", cv/1000, (cv%1000)/10)
	}
	n, ok := get(c, "nvmlDeviceGetCount", l.lib.DeviceGetCount)
	if !ok {
		return f, fmt.Errorf("nvmlDeviceGetCount: %s", strings.Join(f.Errors, "; "))
	}
	if n < 0 || n > gpu.MaxGPUs {
		return f, fmt.Errorf("nvmlDeviceGetCount: %d GPUs, want 0 to %d", n, gpu.MaxGPUs)
	}
	devs := make([]gonvml.Device, 0, n)
	for i := 0; i < n; i++ {
		d, ok := get(c, fmt.Sprintf("nvmlDeviceGetHandleByIndex(%d)", i), func() (gonvml.Device, gonvml.Return) { return l.lib.DeviceGetHandleByIndex(i) })
		if !ok {
			continue
		}
		devs = append(devs, d)
		if l.sensors {
			f.GPUs = append(f.GPUs, c.sensors(i, d))
			continue
		}
		f.GPUs = append(f.GPUs, c.gpu(i, d))
	}
	if l.sensors {
		return f, nil
	}
	for a := range devs {
		for b := range devs {
			if a == b {
				continue
			}
			p := gpu.P2P{A: f.GPUs[a].Index, B: f.GPUs[b].Index}
			p.Read = c.p2p(devs[a], devs[b], gonvml.P2P_CAPS_INDEX_READ)
			p.Write = c.p2p(devs[a], devs[b], gonvml.P2P_CAPS_INDEX_WRITE)
			p.NVLink = c.p2p(devs[a], devs[b], gonvml.P2P_CAPS_INDEX_NVLINK)
			p.Atomics = c.p2p(devs[a], devs[b], gonvml.P2P_CAPS_INDEX_ATOMICS)
			f.P2P = append(f.P2P, p)
		}
	}
	return f, nil
}

func (l *live) errString(g *guard, r gonvml.Return) string {
	s := ""
	if err := g.do(context.Background(), "nvmlErrorString", func() { s = l.lib.ErrorString(r) }); err != nil || s == "" {
		return fmt.Sprintf("NVML error %d", int(r))
	}
	return s
}

type collector struct {
	l   *live
	g   *guard
	ctx context.Context
	f   *gpu.Facts
}

// call runs one NVML call; a failure other than "not supported" is recorded.
func (c *collector) call(name string, fn func() gonvml.Return) bool {
	var r gonvml.Return
	if err := c.g.do(c.ctx, name, func() { r = fn() }); err != nil {
		c.f.Errors = append(c.f.Errors, err.Error())
		return false
	}
	if r == gonvml.SUCCESS {
		return true
	}
	if r != gonvml.ERROR_NOT_SUPPORTED && r != gonvml.ERROR_FUNCTION_NOT_FOUND {
		c.f.Errors = append(c.f.Errors, name+": "+c.l.errString(c.g, r))
	}
	return false
}

// get runs one NVML getter through call: the value, or the zero value and
// false when the call failed or is not supported.
func get[T any](c *collector, name string, fn func() (T, gonvml.Return)) (T, bool) {
	var v T
	if !c.call(name, func() gonvml.Return { var r gonvml.Return; v, r = fn(); return r }) {
		var zero T
		return zero, false
	}
	return v, true
}

// getPtr is get for a fact that stays nil (unknown) when it cannot be read.
func getPtr[T any](c *collector, name string, fn func() (T, gonvml.Return)) *T {
	if v, ok := get(c, name, fn); ok {
		return &v
	}
	return nil
}

func (c *collector) gpu(i int, d gonvml.Device) gpu.GPU {
	g := gpu.GPU{Index: i}
	pfx := fmt.Sprintf("GPU%d ", i)
	if pi, ok := get(c, pfx+"nvmlDeviceGetPciInfo", d.GetPciInfo); ok {
		g.BusID = pci.NormalizeBusID(cString(pi.BusId[:]))
	}
	g.UUID, _ = get(c, pfx+"nvmlDeviceGetUUID", d.GetUUID)
	g.Name, _ = get(c, pfx+"nvmlDeviceGetName", d.GetName)
	g.Serial, _ = get(c, pfx+"nvmlDeviceGetSerial", d.GetSerial)
	if arch, ok := get(c, pfx+"nvmlDeviceGetArchitecture", d.GetArchitecture); ok {
		g.Architecture = archName(arch)
	}
	g.MinorNumber = getPtr(c, pfx+"nvmlDeviceGetMinorNumber", d.GetMinorNumber)
	if mem, ok := get(c, pfx+"nvmlDeviceGetMemoryInfo", d.GetMemoryInfo); ok {
		g.MemoryMiB = new(mem.Total >> 20)
	}
	g.NUMANode = getPtr(c, pfx+"nvmlDeviceGetNumaNodeId", d.GetNumaNodeId)
	if es, ok := get(c, pfx+"nvmlDeviceGetPersistenceMode", d.GetPersistenceMode); ok {
		g.Persistence = new(es == gonvml.FEATURE_ENABLED)
	}
	if mig, ok := get(c, pfx+"nvmlDeviceGetMigMode", func() (int, gonvml.Return) { cur, _, r := d.GetMigMode(); return cur, r }); ok {
		g.MIGEnabled = new(mig == gonvml.DEVICE_MIG_ENABLE)
	}
	var eccCur, eccPend gonvml.EnableState
	if c.call(pfx+"nvmlDeviceGetEccMode", func() gonvml.Return { var r gonvml.Return; eccCur, eccPend, r = d.GetEccMode(); return r }) {
		g.ECC.Current = new(eccCur == gonvml.FEATURE_ENABLED)
		g.ECC.Pending = new(eccPend == gonvml.FEATURE_ENABLED)
		count := func(name string, et gonvml.MemoryErrorType, ct gonvml.EccCounterType) *uint64 {
			return getPtr(c, pfx+name, func() (uint64, gonvml.Return) { return d.GetTotalEccErrors(et, ct) })
		}
		g.ECC.VolatileUncorrected = count("nvmlDeviceGetTotalEccErrors(uncorrected,volatile)", gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC)
		g.ECC.AggregateUncorrected = count("nvmlDeviceGetTotalEccErrors(uncorrected,aggregate)", gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.AGGREGATE_ECC)
		g.ECC.VolatileCorrected = count("nvmlDeviceGetTotalEccErrors(corrected,volatile)", gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC)
		g.ECC.AggregateCorrected = count("nvmlDeviceGetTotalEccErrors(corrected,aggregate)", gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.AGGREGATE_ECC)
	}
	var corr, unc int
	var pend, fail bool
	if c.call(pfx+"nvmlDeviceGetRemappedRows", func() gonvml.Return { var r gonvml.Return; corr, unc, pend, fail, r = d.GetRemappedRows(); return r }) {
		g.Remapped = gpu.Remapped{Correctable: new(uint64(corr)), Uncorrectable: new(uint64(unc)), Pending: new(pend), Failure: new(fail)}
	} else {
		// Page retirement is the pre-Ampere mechanism.
		retired := func(name string, cause gonvml.PageRetirementCause) *uint64 {
			if pages, ok := get(c, pfx+name, func() ([]uint64, gonvml.Return) { return d.GetRetiredPages(cause) }); ok {
				return new(uint64(len(pages)))
			}
			return nil
		}
		g.Retired.SingleBit = retired("nvmlDeviceGetRetiredPages(sbe)", gonvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
		g.Retired.DoubleBit = retired("nvmlDeviceGetRetiredPages(dbe)", gonvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
		if es, ok := get(c, pfx+"nvmlDeviceGetRetiredPagesPendingStatus", d.GetRetiredPagesPendingStatus); ok {
			g.Retired.Pending = new(es == gonvml.FEATURE_ENABLED)
		}
	}
	c.readSensors(pfx, d, &g)
	g.PCIe.MaxGen = getPtr(c, pfx+"nvmlDeviceGetMaxPcieLinkGeneration", d.GetMaxPcieLinkGeneration)
	g.PCIe.CurGen = getPtr(c, pfx+"nvmlDeviceGetCurrPcieLinkGeneration", d.GetCurrPcieLinkGeneration)
	g.PCIe.MaxWidth = getPtr(c, pfx+"nvmlDeviceGetMaxPcieLinkWidth", d.GetMaxPcieLinkWidth)
	g.PCIe.CurWidth = getPtr(c, pfx+"nvmlDeviceGetCurrPcieLinkWidth", d.GetCurrPcieLinkWidth)
	if v, ok := get(c, pfx+"nvmlDeviceGetPcieReplayCounter", d.GetPcieReplayCounter); ok {
		g.PCIe.ReplayCounter = new(uint64(v))
	}
	c.nvlinks(pfx, d, &g)
	if fi, ok := get(c, pfx+"nvmlDeviceGetGpuFabricInfo", d.GetGpuFabricInfo); ok {
		g.Fabric = gpu.Fabric{Supported: fi.State != gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED, State: fabricState(fi.State), CliqueID: new(fi.CliqueId),
			ClusterUUID: uuidString(fi.ClusterUuid)}
		if g.Fabric.Supported {
			if gonvml.Return(fi.Status) == gonvml.SUCCESS {
				g.Fabric.Status = "success"
			} else {
				g.Fabric.Status = c.l.errString(c.g, gonvml.Return(fi.Status))
			}
		}
	}
	return g
}

// sensors is a GPU's PCI address and its sensors only (WithSensorsOnly).
func (c *collector) sensors(i int, d gonvml.Device) gpu.GPU {
	g := gpu.GPU{Index: i}
	pfx := fmt.Sprintf("GPU%d ", i)
	if pi, ok := get(c, pfx+"nvmlDeviceGetPciInfo", d.GetPciInfo); ok {
		g.BusID = pci.NormalizeBusID(cString(pi.BusId[:]))
	}
	c.readSensors(pfx, d, &g)
	return g
}

// readSensors reads what changes under load: clock-event reasons, SM
// clock and its maximum, power and its limit, temperature.
func (c *collector) readSensors(pfx string, d gonvml.Device, g *gpu.GPU) {
	if reasons, ok := get(c, pfx+"nvmlDeviceGetCurrentClocksEventReasons", d.GetCurrentClocksEventReasons); ok {
		g.ClockEvents = ClockEventNames(reasons)
	}
	g.Sensors.SMClockMHz = getPtr(c, pfx+"nvmlDeviceGetClockInfo(sm)", func() (uint32, gonvml.Return) { return d.GetClockInfo(gonvml.CLOCK_SM) })
	g.Sensors.MaxSMClockMHz = getPtr(c, pfx+"nvmlDeviceGetMaxClockInfo(sm)", func() (uint32, gonvml.Return) { return d.GetMaxClockInfo(gonvml.CLOCK_SM) })
	if mw, ok := get(c, pfx+"nvmlDeviceGetPowerUsage", d.GetPowerUsage); ok {
		g.Sensors.PowerW = new(float64(mw) / 1000)
	}
	if mw, ok := get(c, pfx+"nvmlDeviceGetEnforcedPowerLimit", d.GetEnforcedPowerLimit); ok {
		g.Sensors.PowerLimitW = new(float64(mw) / 1000)
	}
	g.Sensors.TempC = getPtr(c, pfx+"nvmlDeviceGetTemperature(gpu)", func() (uint32, gonvml.Return) { return d.GetTemperature(gonvml.TEMPERATURE_GPU) })
}

// nvlinks reads the state of every NVLink of g, then the counters of the
// active ones.
func (c *collector) nvlinks(pfx string, d gonvml.Device, g *gpu.GPU) {
	c.nvlinkStates(pfx, d, g)
	c.nvlinkCounters(pfx, d, g)
}

func (c *collector) nvlinkStates(pfx string, d gonvml.Device, g *gpu.GPU) {
	for link := 0; link < gonvml.NVLINK_MAX_LINKS; link++ {
		var st gonvml.EnableState
		var r gonvml.Return
		name := fmt.Sprintf("%snvmlDeviceGetNvLinkState(%d)", pfx, link)
		if err := c.g.do(c.ctx, name, func() { st, r = d.GetNvLinkState(link) }); err != nil {
			c.f.Errors = append(c.f.Errors, err.Error())
			return
		}
		if r == gonvml.ERROR_NOT_SUPPORTED || r == gonvml.ERROR_INVALID_ARGUMENT {
			// Past the last link this GPU has (or no NVLink at all).
			if link == 0 {
				g.NVLinkQueried = true
			}
			return
		}
		if r != gonvml.SUCCESS {
			c.f.Errors = append(c.f.Errors, name+": "+c.l.errString(c.g, r))
			return
		}
		g.NVLinkQueried = true
		nl := gpu.NVLink{Link: link, Active: st == gonvml.FEATURE_ENABLED}
		if nl.Active {
			if ver, ok := get(c, fmt.Sprintf("%snvmlDeviceGetNvLinkVersion(%d)", pfx, link), func() (uint32, gonvml.Return) { return d.GetNvLinkVersion(link) }); ok {
				nl.Version = int(ver)
			}
			if rp, ok := get(c, fmt.Sprintf("%snvmlDeviceGetNvLinkRemotePciInfo(%d)", pfx, link), func() (gonvml.PciInfo, gonvml.Return) { return d.GetNvLinkRemotePciInfo(link) }); ok {
				nl.RemoteBusID = pci.NormalizeBusID(cString(rp.BusId[:]))
			}
			if rt, ok := get(c, fmt.Sprintf("%snvmlDeviceGetNvLinkRemoteDeviceType(%d)", pfx, link), func() (gonvml.IntNvLinkDeviceType, gonvml.Return) { return d.GetNvLinkRemoteDeviceType(link) }); ok {
				nl.RemoteType = remoteType(rt)
			}
		}
		g.NVLinks = append(g.NVLinks, nl)
	}
}

func (c *collector) p2p(a, b gonvml.Device, idx gonvml.GpuP2PCapsIndex) string {
	st, ok := get(c, fmt.Sprintf("nvmlDeviceGetP2PStatus(%d)", idx), func() (gonvml.GpuP2PStatus, gonvml.Return) { return c.l.lib.DeviceGetP2PStatus(a, b, idx) })
	if !ok {
		return gpu.P2PUnknown
	}
	return P2PStatusName(st)
}

// P2PStatusName maps NVML's P2P status to gdrcheck's names.
func P2PStatusName(s gonvml.GpuP2PStatus) string {
	switch s {
	case gonvml.P2P_STATUS_OK:
		return gpu.P2POK
	case gonvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED:
		return gpu.P2PChipsetNotSupported
	case gonvml.P2P_STATUS_GPU_NOT_SUPPORTED:
		return gpu.P2PGPUNotSupported
	case gonvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
		return gpu.P2PTopologyNotSupported
	case gonvml.P2P_STATUS_DISABLED_BY_REGKEY:
		return gpu.P2PDisabledByRegkey
	case gonvml.P2P_STATUS_NOT_SUPPORTED:
		return gpu.P2PNotSupported
	}
	return gpu.P2PUnknown
}

// ClockEventNames names the set bits of NVML's clock event reasons mask.
func ClockEventNames(mask uint64) []string {
	names := []struct {
		bit  uint64
		name string
	}{
		{gonvml.ClocksEventReasonGpuIdle, "gpu_idle"},
		{gonvml.ClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
		{gonvml.ClocksEventReasonSwPowerCap, "sw_power_cap"},
		{gonvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
		{gonvml.ClocksEventReasonSyncBoost, "sync_boost"},
		{gonvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
		{gonvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
		{gonvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
		{gonvml.ClocksEventReasonDisplayClockSetting, "display_clocks_setting"},
	}
	out := []string{}
	for _, n := range names {
		if mask&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

func remoteType(t gonvml.IntNvLinkDeviceType) string {
	switch t {
	case gonvml.NVLINK_DEVICE_TYPE_GPU:
		return "gpu"
	case gonvml.NVLINK_DEVICE_TYPE_SWITCH:
		return "nvswitch"
	case gonvml.NVLINK_DEVICE_TYPE_IBMNPU:
		return "ibmnpu"
	}
	return "unknown"
}

// uuidString writes a 16-byte UUID as 8-4-4-4-12 hex digits.
func uuidString(u [16]uint8) string {
	b := u[:]
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func fabricState(s uint8) string {
	switch s {
	case gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED:
		return "not-supported"
	case gonvml.GPU_FABRIC_STATE_NOT_STARTED:
		return "not-started"
	case gonvml.GPU_FABRIC_STATE_IN_PROGRESS:
		return "in-progress"
	case gonvml.GPU_FABRIC_STATE_COMPLETED:
		return "completed"
	}
	return fmt.Sprintf("state-%d", s)
}

func archName(a gonvml.DeviceArchitecture) string {
	switch a {
	case gonvml.DEVICE_ARCH_KEPLER:
		return "Kepler"
	case gonvml.DEVICE_ARCH_MAXWELL:
		return "Maxwell"
	case gonvml.DEVICE_ARCH_PASCAL:
		return "Pascal"
	case gonvml.DEVICE_ARCH_VOLTA:
		return "Volta"
	case gonvml.DEVICE_ARCH_TURING:
		return "Turing"
	case gonvml.DEVICE_ARCH_AMPERE:
		return "Ampere"
	case gonvml.DEVICE_ARCH_ADA:
		return "Ada"
	case gonvml.DEVICE_ARCH_HOPPER:
		return "Hopper"
	case gonvml.DEVICE_ARCH_BLACKWELL:
		return "Blackwell"
	}
	return fmt.Sprintf("arch-%d", a)
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
