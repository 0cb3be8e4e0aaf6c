package burn

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// IDECC is the verdict on each GPU's corrected (single-bit) ECC errors
// under the workload, as a rate.
const IDECC = "burn.ecc"

// ECCCeiling is the corrected-error rate above which a GPU's memory is
// named: errors per GiB of memory per hour under load. It is the top of
// the field rate of correctable DRAM errors in Google's fleet, 25,000 to
// 70,000 FIT per Mbit (failures per 10^9 device hours per Mbit; Schroeder,
// Pinheiro, Weber, "DRAM Errors in the Wild: A Large-Scale Field Study",
// SIGMETRICS 2009): 70,000e-9 per Mbit-hour × 8,192 Mbit per GiB ≈ 0.57
// per GiB-hour, about 46 an hour on an 80 GiB GPU. That average is carried
// by a minority of modules (most saw none), so a GPU above it under load is
// in the error-prone tail.
const ECCCeiling = 70000e-9 * 8192

// ECCRiseWindows is how many windows in a row with new corrected errors
// make a steady rise: a weak cell that keeps erring under load, what the
// driver retires a page for (pre-Ampere: "multiple single bit ECC
// errors") or remaps a row for (Ampere and later: rows remapped for
// correctable errors).
const ECCRiseWindows = 3

// JudgeECC judges each GPU's volatile corrected ECC count over the
// windows. The rate is errors per GiB-hour of the GPU's memory under load
// (its memory size × the window's length): ECC errors come from cells
// (retention faults, particle strikes), counted when read, so their rate
// scales with the memory and the time it is exercised, the unit field
// studies use, not with the bytes the workload happened to move (a weak
// cell read a million times is one fault). A window whose rate is above
// ECCCeiling with 95% confidence warns (a burst), as do new errors in
// ECCRiseWindows windows in a row (a steady rise); the whole run passes
// when its rate is proven within the ceiling, and is unknown when too
// little was run to prove it or a window's count could not be read (a
// GPU whose counter was not read is never a pass). Uncorrectable errors
// are burn.gpu's (they fail). baseline's last reading is the first
// window's start; ends[i] is window i's end.
func JudgeECC(s Schedule, baseline, ends []*GPUReading, conf float64) []result.Result {
	if len(baseline) == 0 || len(ends) == 0 {
		return nil
	}
	if conf <= 0 {
		conf = DefaultConfidence
	}
	type state struct {
		k            uint64
		exposure     float64 // GiB-hours over the windows read
		windows      int
		unread, warn []string
		run          int // windows in a row with new errors
		rose         bool
		memGiB       float64
	}
	per := map[string]*state{}
	var order []string
	get := func(addr string) *state {
		st := per[addr]
		if st == nil {
			st = &state{}
			per[addr] = st
			order = append(order, addr)
		}
		return st
	}
	var out []result.Result
	// Counted between the two baselines: not the workload's, reported.
	if len(baseline) > 1 {
		var moved []string
		a, b := baseline[len(baseline)-2], baseline[len(baseline)-1]
		if a != nil && b != nil && a.Facts != nil && b.Facts != nil {
			for _, g := range b.Facts.GPUs {
				if p := findGPU(a.Facts.GPUs, g.BusID); p != nil {
					if x, y := p.ECC.VolatileCorrected, g.ECC.VolatileCorrected; x != nil && y != nil && *y > *x {
						moved = append(moved, fmt.Sprintf("%s: %d", g.BusID, *y-*x))
					}
				}
			}
		}
		if len(moved) > 0 {
			out = append(out, result.Result{ID: IDECC, Source: Source, Status: result.Skip, Subject: "node", Reason: "ECCBefore",
				Message: "corrected ECC errors counted before the workload, between the baselines (not judged): " + strings.Join(compact(moved), ", ")})
		}
	}
	for _, wr := range windowReadings(s, baseline, ends) {
		i, prev, cur, name := wr.i, wr.prev, wr.cur, wr.name
		if cur == nil || cur.Facts == nil {
			// burn.gpu says why; each GPU seen so far is unread here.
			for _, addr := range order {
				per[addr].unread = append(per[addr].unread, name+": no reading at its end")
				per[addr].run = 0
			}
			continue
		}
		var prevGPUs []gpu.GPU
		if prev != nil && prev.Facts != nil {
			prevGPUs = prev.Facts.GPUs
		}
		hours := s.Windows[i].End.Sub(s.Windows[i].Start).Hours()
		// A GPU seen before and not reported at this end (burn.gpu fails it).
		for _, addr := range order {
			if findGPU(cur.Facts.GPUs, addr) == nil {
				per[addr].unread = append(per[addr].unread, name+": the driver does not report the GPU at its end")
				per[addr].run = 0
			}
		}
		for _, g := range cur.Facts.GPUs {
			st := get(g.BusID)
			st.windows++
			if g.MemoryMiB != nil && *g.MemoryMiB > 0 {
				st.memGiB = float64(*g.MemoryMiB) / 1024
			}
			p := findGPU(prevGPUs, g.BusID)
			var a, b *uint64
			if p != nil {
				a = p.ECC.VolatileCorrected
			}
			b = g.ECC.VolatileCorrected
			switch {
			case g.ECC.Current != nil && !*g.ECC.Current:
				st.unread = append(st.unread, name+": ECC is off, nothing is corrected or counted")
				st.run = 0
				continue
			case p == nil || a == nil || b == nil:
				st.unread = append(st.unread, name+": the corrected count was not read at both ends")
				st.run = 0
				continue
			case *b < *a:
				st.unread = append(st.unread, fmt.Sprintf("%s: the corrected count went from %d to %d (the driver reloaded?)", name, *a, *b))
				st.run = 0
				continue
			case st.memGiB <= 0 || hours <= 0:
				st.unread = append(st.unread, name+": the GPU's memory size is unknown, so no rate")
				continue
			}
			k := *b - *a
			e := st.memGiB * hours
			st.k += k
			st.exposure += e
			if k == 0 {
				st.run = 0
				continue
			}
			st.run++
			if r := RateOf(k, e, conf); r.Lower > ECCCeiling {
				st.warn = append(st.warn, fmt.Sprintf("%s: %d corrected error(s), %.3g per GiB-hour (at least %.3g at %g%% confidence)", name, k, r.Estimate, r.Lower, conf*100))
			}
			if st.run == ECCRiseWindows {
				st.rose = true
				st.warn = append(st.warn, fmt.Sprintf("%s: new corrected errors in %d windows in a row", name, ECCRiseWindows))
			}
		}
	}
	for _, addr := range order {
		st := per[addr]
		r := result.Result{ID: IDECC, Source: Source, Subject: addr}
		total := fmt.Sprintf("%d corrected error(s) over %.3g GiB-hours of memory under load", st.k, st.exposure)
		var rate Rate
		if st.exposure > 0 {
			rate = RateOf(st.k, st.exposure, conf)
			total += fmt.Sprintf(" (%.3g per GiB-hour, at most %.3g at %g%% confidence; the ceiling is %.2g)", rate.Estimate, rate.Upper, conf*100, ECCCeiling)
		}
		switch {
		case len(st.warn) > 0:
			r.Status, r.Reason = result.Warn, "CorrectedECCErrors"
			if st.rose {
				r.Reason = "CorrectedECCRising"
			}
			r.Message = strings.Join(compact(st.warn), "; ") + "; " + total
			r.Remedy = "corrected errors under load are a memory cell or a row going bad: read nvidia-smi -q -d ECC,ROW_REMAPPER (or PAGE_RETIREMENT), reset the GPU for a pending remap, rerun the burn-in, and RMA a GPU whose count keeps rising"
		case len(st.unread) > 0 || st.exposure <= 0:
			r.Status, r.Reason = result.Unknown, "ECCUnread"
			r.Message = strings.Join(compact(st.unread), "; ")
			if r.Message == "" {
				r.Message = "no window's corrected count was read"
			}
		case rate.Estimate > ECCCeiling:
			r.Status, r.Reason = result.Warn, "CorrectedECCErrors"
			r.Message = total
			r.Remedy = "corrected errors above the field rate: read nvidia-smi -q -d ECC,ROW_REMAPPER and rerun the burn-in longer"
		case rate.Upper > ECCCeiling:
			r.Status, r.Reason = result.Unknown, "TooShortForECCRate"
			r.Message = fmt.Sprintf("%s: proving the ceiling needs about %.3g GiB-hours (%.2g hours on this GPU): run the burn-in longer",
				total, PoissonUpper(st.k, conf)/ECCCeiling, PoissonUpper(st.k, conf)/ECCCeiling/st.memGiB)
		default:
			r.Status, r.Reason = result.Pass, "CorrectedECCWithinRate"
			r.Message = fmt.Sprintf("%d window(s): %s", st.windows, total)
		}
		out = append(out, r)
	}
	return out
}
