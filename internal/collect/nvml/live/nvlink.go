//go:build cgo

package live

import (
	"encoding/binary"
	"fmt"
	"math"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
)

// dlCounters are the data-link error counters of NVLink 1 to 4, read per
// link with nvmlDeviceGetNvLinkErrorCounter: the call DCGM 4.6 reads its
// per-link NVLink error fields with (dcgmlib/src/DcgmCacheManager.cpp,
// ReadAndCacheNvLinkData), for every link number. The field ids
// NVML_FI_DEV_NVLINK_*_ERROR_COUNT_L0…L11 stop at link 11, while Hopper
// and Blackwell GPUs have 18 links. nvml.h documents the data-link
// counters as unsupported from Blackwell on, whose counters are the NVLink 5
// field values below; whatever a driver refuses is missing.
var dlCounters = []struct {
	name    string
	counter gonvml.NvLinkErrorCounter
}{
	{gpu.NVLinkCRCFlit, gonvml.NVLINK_ERROR_DL_CRC_FLIT},
	{gpu.NVLinkCRCData, gonvml.NVLINK_ERROR_DL_CRC_DATA},
	{gpu.NVLinkReplay, gonvml.NVLINK_ERROR_DL_REPLAY},
	{gpu.NVLinkRecovery, gonvml.NVLINK_ERROR_DL_RECOVERY},
}

// linkFields are the counters read per link as NVML field values, scopeId
// = the link number, all of a GPU's links in one nvmlDeviceGetFieldValues
// call: the payload each way (KiB; DCGM reads its per-link throughput so)
// and NVLink 5's counters (older GPUs answer NOT_SUPPORTED).
//
// The scoped data-link fields (NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY,
// _RECOVERY, _CRC: "Link ID needs to be specified in the scopeId field")
// are asked in the same call as a fallback: used only where
// nvmlDeviceGetNvLinkErrorCounter refused the counter, so a driver that
// answers one of the two forms is read. _CRC is the data-link CRC counter,
// taken as the flow-control one (nvml.h names no other).
var linkFields = []struct {
	name     string
	id       uint32
	fallback bool
}{
	{gpu.NVLinkTxKiB, gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, false},
	{gpu.NVLinkRxKiB, gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, false},
	{gpu.NVLinkRecoveryEvents, gonvml.FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS, false},
	{gpu.NVLinkRecoveryFailed, gonvml.FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS, false},
	{gpu.NVLinkEffectiveErrors, gonvml.FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS, false},
	{gpu.NVLinkIntegrityErrors, gonvml.FI_DEV_NVLINK_COUNT_LOCAL_LINK_INTEGRITY_ERRORS, false},
	{gpu.NVLinkRcvErrors, gonvml.FI_DEV_NVLINK_COUNT_RCV_ERRORS, false},
	{gpu.NVLinkSymbolErrors, gonvml.FI_DEV_NVLINK_COUNT_SYMBOL_ERRORS, false},
	{gpu.NVLinkReplay, gonvml.FI_DEV_NVLINK_ERROR_DL_REPLAY, true},
	{gpu.NVLinkRecovery, gonvml.FI_DEV_NVLINK_ERROR_DL_RECOVERY, true},
	{gpu.NVLinkCRCFlit, gonvml.FI_DEV_NVLINK_ERROR_DL_CRC, true},
}

// nvlinkCounters reads the counters of every active link of g. Each call
// runs under the guard's deadline; a counter the driver refuses (not
// supported, no permission) is missing with NVML's reason, never 0.
func (c *collector) nvlinkCounters(pfx string, d gonvml.Device, g *gpu.GPU) {
	var links []int
	for _, l := range g.NVLinks {
		if l.Active {
			links = append(links, l.Link)
		}
	}
	if len(links) == 0 {
		return
	}
	// NVML's message for each refusal, asked once: a Hopper refuses NVLink
	// 5's six counters on every link.
	msgs := map[gonvml.Return]string{}
	errString := func(r gonvml.Return) string {
		if m, ok := msgs[r]; ok {
			return m
		}
		msgs[r] = c.l.errString(c.g, r)
		return msgs[r]
	}
	out := make([]gpu.NVLinkCounters, 0, len(links))
	for _, link := range links {
		lc := gpu.NVLinkCounters{Link: link}
		for _, dl := range dlCounters {
			var v uint64
			var r gonvml.Return
			name := fmt.Sprintf("%snvmlDeviceGetNvLinkErrorCounter(%d,%s)", pfx, link, dl.name)
			if err := c.g.do(c.ctx, name, func() { v, r = d.GetNvLinkErrorCounter(link, dl.counter) }); err != nil {
				lc.Miss(dl.name, err.Error())
				continue
			}
			if r != gonvml.SUCCESS {
				lc.Miss(dl.name, "nvmlDeviceGetNvLinkErrorCounter: "+errString(r))
				continue
			}
			lc.Set(dl.name, v)
		}
		out = append(out, lc)
	}
	values := make([]gonvml.FieldValue, 0, len(links)*len(linkFields))
	for _, link := range links {
		for _, f := range linkFields {
			values = append(values, gonvml.FieldValue{FieldId: f.id, ScopeId: uint32(link)})
		}
	}
	var r gonvml.Return
	name := pfx + "nvmlDeviceGetFieldValues(nvlink)"
	err := c.g.do(c.ctx, name, func() { r = d.GetFieldValues(values) })
	for i := range out {
		for j, f := range linkFields {
			fv := values[i*len(linkFields)+j]
			miss := out[i].Miss
			if f.fallback {
				before, refused := out[i].Missing[f.name]
				if !refused {
					continue // read by nvmlDeviceGetNvLinkErrorCounter
				}
				miss = func(name, why string) { out[i].Miss(name, before+"; "+why) }
			}
			switch {
			case err != nil:
				miss(f.name, err.Error())
			case r != gonvml.SUCCESS:
				miss(f.name, "nvmlDeviceGetFieldValues: "+errString(r))
			case gonvml.Return(fv.NvmlReturn) != gonvml.SUCCESS:
				miss(f.name, fmt.Sprintf("nvmlDeviceGetFieldValues field %d: %s", f.id, errString(gonvml.Return(fv.NvmlReturn))))
			default:
				if v, err := fieldUint(fv); err != nil {
					miss(f.name, fmt.Sprintf("nvmlDeviceGetFieldValues field %d: %v", f.id, err))
				} else {
					out[i].Set(f.name, v)
				}
			}
		}
	}
	g.NVLinkCounters = out
}

// fieldUint is a field value as a count: an unsigned value of any width, or
// a signed one that is not negative.
func fieldUint(fv gonvml.FieldValue) (uint64, error) {
	b := fv.Value[:]
	switch gonvml.ValueType(fv.ValueType) {
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(b)), nil
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return binary.NativeEndian.Uint64(b), nil
	case gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		return uint64(binary.NativeEndian.Uint16(b)), nil
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		if v := int64(binary.NativeEndian.Uint64(b)); v >= 0 {
			return uint64(v), nil
		}
	case gonvml.VALUE_TYPE_SIGNED_INT:
		if v := int32(binary.NativeEndian.Uint32(b)); v >= 0 {
			return uint64(v), nil
		}
	case gonvml.VALUE_TYPE_DOUBLE:
		if v := math.Float64frombits(binary.NativeEndian.Uint64(b)); v >= 0 && v < 1<<63 && v == math.Trunc(v) {
			return uint64(v), nil
		}
	default:
		return 0, fmt.Errorf("value type %d unknown", fv.ValueType)
	}
	return 0, fmt.Errorf("not a count (value type %d)", fv.ValueType)
}
