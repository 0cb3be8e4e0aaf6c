package dossier

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// File is one rendered file of the dossier: its name in the dossier's
// folder and the renderer that writes it from the report.
type File struct {
	Name   string
	Render func(w io.Writer, r *Report) error
}

// The dossier's file names.
const (
	ReportJSON  = "report.json"
	ReportMD    = "report.md"
	JUnitXML    = "junit.xml"
	MetricsProm = "metrics.prom"
	Sums        = "SHA256SUMS"
	// RawDir holds the raw NCCL logs and tool outputs.
	RawDir = "raw"
)

// Files are the dossier's rendered files after report.json, in the order
// they are written. A renderer of another format (report.html) is one
// more File in the list the caller passes to the writer (app's
// dossierFiles), not a change here.
func Files() []File {
	return []File{
		{ReportMD, WriteMarkdown},
		{JUnitXML, WriteJUnit},
		{MetricsProm, func(w io.Writer, r *Report) error { return report.Write(w, report.Prometheus, r.Envelope()) }},
	}
}

// WriteJUnit writes every result as a JUnit test case (report.WriteJUnit),
// for CI pipelines.
func WriteJUnit(w io.Writer, r *Report) error {
	return report.WriteJUnit(w, "gdrcheck", append(slices.Clone(r.Results), proofCases(r)...), r.Run.EndedAt.Sub(r.Run.StartedAt))
}

// proofCases are the sign-off's test cases for JUnit: one per hop of each
// data path and per GPU link, passing when measured, failing when failed,
// and skipped when only checked or not exercised (failing under --strict,
// where the sign-off requires them measured).
func proofCases(r *Report) []result.Result {
	var out []result.Result
	add := func(kind, subject string, p result.Proof) {
		st := result.Skip
		switch {
		case p == "":
			return
		case p == result.ProofMeasured:
			st = result.Pass
		case p == result.ProofFailed || r.Verdict.Strict:
			st = result.Fail
		}
		out = append(out, result.Result{ID: "proof." + kind, Subject: subject, Status: st, Source: "sign-off", Reason: string(p),
			Message: subject + ": " + p.Phrase()})
	}
	for _, dp := range r.Topology.DataPaths {
		for _, h := range dp.Hops {
			add(h.Kind, fmt.Sprintf("GPU%d %s", dp.GPU, h.Name), h.Proof)
		}
	}
	for _, l := range r.Topology.GPULinks {
		add("gpu-link", fmt.Sprintf("GPU%d-GPU%d", l.A, l.B), l.Proof)
	}
	return out
}

// SumLine is one SHA256SUMS line for a file's content: the digest, two
// spaces, the path (sha256sum's text mode, which `sha256sum -c` reads).
func SumLine(path string, content []byte) string {
	s := sha256.Sum256(content)
	return hex.EncodeToString(s[:]) + "  " + path + "\n"
}

// WriteMarkdown writes report.md, for tickets and wikis: the verdict
// first, then what ran, the inventory, the data paths, the measurements,
// NCCL's transports, the checks and the artifacts. Every value from the
// node is escaped for its cell or line.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	c := printable.Cell
	v := r.Verdict
	// The heading is Markdown like the cells: a host name from the
	// machine (a snapshot's hostname file says anything) escaped as one.
	fmt.Fprintf(&b, "# gdrcheck: %s — %s\n\n", c(cmp.Or(r.Inventory.Host, v.Host, "(unknown host)")), c(v.Status))
	fmt.Fprintf(&b, "**%s**\n\n", c(v.Line()))
	if !r.Complete {
		why := r.Interrupted
		if why == "" {
			why = "a phase did not finish (see Phases)"
		}
		fmt.Fprintf(&b, "> **Incomplete report:** %s. What follows is what was measured before.\n\n", c(why))
	}
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| tool | gdrcheck %s (%s) |\n", c(r.Run.Version), c(r.Run.Commit))
	fmt.Fprintf(&b, "| ran on | %s |\n", c(r.Run.Host))
	fmt.Fprintf(&b, "| started | %s |\n| ended | %s |\n", r.Run.StartedAt.Format("2006-01-02 15:04:05 MST"), r.Run.EndedAt.Format("2006-01-02 15:04:05 MST"))
	fmt.Fprintf(&b, "| command | %s |\n", printable.Code(strings.Join(r.Run.Command, " ")))
	fmt.Fprintf(&b, "| profile | %s |\n", c(r.Profile))
	if r.Expect != "" {
		fmt.Fprintf(&b, "| site profile | %s |\n", c(r.Expect))
	}
	inv := r.Inventory
	if inv.Root != "/" && inv.Root != "" {
		fmt.Fprintf(&b, "| read from | %s |\n", c(inv.Root))
	}
	b.WriteString("\n## Phases\n\n| phase | status | reason | ms |\n|---|---|---|---|\n")
	for _, p := range r.Phases {
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f |\n", c(p.Name), p.Status, c(p.Reason), p.DurationMS)
	}
	b.WriteString("\n## Inventory\n\n")
	fmt.Fprintf(&b, "| | |\n|---|---|\n| kernel | %s |\n| NVIDIA driver | %s |\n| CUDA (driver) | %s |\n| CUDA runtime | %s |\n| NCCL | %s |\n",
		c(inv.Kernel), c(orNone(inv.Driver, inv.GPUFactsError)), c(inv.CUDADriver), c(libText(inv.CUDARuntime)), c(libText(inv.NCCL)))
	if inv.RDMACore != "" || inv.MLX5Core != "" {
		fmt.Fprintf(&b, "| rdma-core | %s |\n| mlx5_core | %s |\n", c(inv.RDMACore), c(inv.MLX5Core))
	}
	if len(inv.GPUs) == 0 {
		b.WriteString("\nGPUs: none (no NVIDIA GPU on the PCI bus).\n")
	} else {
		b.WriteString("\n| GPU | bus id | name | serial | UUID | NUMA | PCIe | NVLink |\n|---|---|---|---|---|---|---|---|\n")
		for _, g := range inv.GPUs {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %d | %s x%d (max %s x%d) | %s |\n", g.Index, c(g.BusID), c(g.Name), c(g.Serial), c(g.UUID), g.NUMA,
				g.PCIe.CurSpeed, g.PCIe.CurWidth, g.PCIe.MaxSpeed, g.PCIe.MaxWidth, nvlinkText(g.NVLinksActive, g.NVLinksTotal))
		}
	}
	if len(inv.NICs) == 0 {
		b.WriteString("\nRDMA NICs: none (GPU Direct RDMA is not possible on this node).\n")
	} else {
		b.WriteString("\n| NIC | bus id | type | board | firmware | ports |\n|---|---|---|---|---|---|\n")
		for _, n := range inv.NICs {
			var ports []string
			for _, p := range n.Ports {
				ports = append(ports, fmt.Sprintf("%d %s %s %s", p.Number, p.State, p.LinkLayer, cmp.Or(p.Rate, "?")))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", c(n.Name), c(n.BusID), c(n.HCAType), c(n.BoardID), c(n.Firmware), c(strings.Join(ports, "; ")))
		}
	}
	for _, x := range inv.NotCollected {
		fmt.Fprintf(&b, "\nNot collected: %s.\n", c(x))
	}
	if len(r.Topology.DataPaths) > 0 {
		b.WriteString("\n## Data paths\n\nEach GPU's path to the fabric, hop by hop, with the status of the evidence at each hop (unknown: nothing looked at it) and how the hop was established (measured: traffic crossed it and was judged; checked: its configuration was read and judged; not exercised: nothing judged it).\n\n| GPU | GDR | path |\n|---|---|---|\n")
		for _, p := range r.Topology.DataPaths {
			var hops []string
			for _, h := range p.Hops {
				hops = append(hops, fmt.Sprintf("%s %s (%s%s)", h.Kind, h.Name, h.Status, proofSuffix(h.Proof)))
			}
			gdr := p.GDR
			if p.GDRWhy != "" {
				gdr += ": " + p.GDRWhy
			}
			if p.GDRUsed != "" {
				gdr += " (measured: " + p.GDRUsed + ")"
			}
			fmt.Fprintf(&b, "| GPU%d | %s | %s |\n", p.GPU, c(gdr), c(strings.Join(hops, " → ")))
		}
	}
	if len(r.Topology.GPULinks) > 0 {
		b.WriteString("\n## GPU ↔ GPU\n\n| GPUs | link | status | evidence |\n|---|---|---|---|\n")
		for _, g := range r.Topology.GPULinks {
			fmt.Fprintf(&b, "| GPU%d ↔ GPU%d | %s | %s | %d |\n", g.A, g.B, c(g.Level), g.Status, len(g.Evidence))
		}
	}
	if len(r.Jobs) > 0 {
		b.WriteString("\n## Jobs included\n\nJobs of several nodes brought into this dossier (run --include), and what their ranks on this node reached.\n\n| job | file | nodes | rank | GPU | reached | over | GPU memory | status |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, j := range r.Jobs {
			for _, x := range j.Ranks {
				gpu := "not found (" + x.BusID + ")"
				if x.GPU >= 0 {
					gpu = "GPU" + strconv.Itoa(x.GPU)
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s | %s | %s |\n", c(j.Name), c(j.Path), len(j.Nodes), x.Rank, c(gpu),
					c(strings.Join(x.Peers, ", ")), c(strings.Join(append(slices.Clone(x.Transports), x.NICs...), ", ")), c(strings.TrimSpace(x.GDR+" "+paren(x.Registration))), j.Status)
			}
			for _, x := range j.Pairs {
				gpu := "not found (" + x.BusID + ")"
				if x.GPU >= 0 {
					gpu = "GPU" + strconv.Itoa(x.GPU)
				}
				fmt.Fprintf(&b, "| %s | %s | – | – | %s | %s | bench rdma %s:%d | %s | %s |\n", c(j.Name), c(j.Path), c(gpu),
					c(cmp.Or(x.Peer, "loopback")), c(x.NIC), x.Port, c(strings.Join(x.Memory, ", ")), j.Status)
			}
		}
	}
	m := r.Measurements
	b.WriteString("\n## Measurements\n\n")
	if m.Basis != "" {
		fmt.Fprintf(&b, "Expected: %s; a measurement passes at %.0f%% of expected.\n\n", c(m.Basis), 100*m.Pass)
	}
	if len(m.Collectives) == 0 && len(m.Copies) == 0 {
		b.WriteString("None: no benchmark ran (see Phases for why).\n")
	}
	if len(m.Collectives) > 0 {
		b.WriteString("| collective | size | ranks | busbw GB/s | expected | healthy range (public runs) | fraction | status |\n|---|---|---|---|---|---|---|---|\n")
		for _, x := range m.Collectives {
			ranks := strconv.Itoa(x.Ranks)
			if x.Nodes > 1 {
				ranks += fmt.Sprintf(" (%d nodes, %s)", x.Nodes, x.Run)
			}
			name := x.Collective
			if x.Variant != "" {
				name += " " + x.Variant
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %s | %s | %s | %s |\n", c(name), collective.FormatSize(x.Bytes), c(ranks), x.BusBW, optGB(x.ExpectedBusBW), c(intervalText(x.Interval)), optPct(x.Fraction), x.Status)
		}
		b.WriteString("\n")
	}
	if len(m.Copies) > 0 {
		b.WriteString("| copy | GPU | peer | size | GB/s | expected | fraction | status |\n|---|---|---|---|---|---|---|---|\n")
		for _, x := range m.Copies {
			peer := ""
			if x.Peer >= 0 {
				peer = strconv.Itoa(x.Peer)
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %.1f | %s | %s | %s |\n", c(x.Test), x.Device, peer, collective.FormatSize(x.Bytes), x.GBps, optGB(x.ExpectedGBps), optPct(x.Fraction), x.Status)
		}
	}
	if len(m.RDMA) > 0 {
		b.WriteString("\n| RDMA | pair | memory | to | Gb/s | status |\n|---|---|---|---|---|---|\n")
		for _, x := range m.RDMA {
			fmt.Fprintf(&b, "| %s %s | GPU%d-%s:%d | %s | %s | %.1f | %s%s |\n", c(x.Job), c(x.Test), x.GPU, c(x.NIC), x.Port, c(x.Memory), c(cmp.Or(x.Peer, "loopback")), x.Gbps, x.Status, c(paren(x.Error)))
		}
	}
	if len(r.NCCL) > 0 {
		b.WriteString("\n## NCCL transports\n\n")
		for _, n := range r.NCCL {
			var ts []string
			for _, t := range n.Transports {
				ts = append(ts, fmt.Sprintf("%s (%s) %d lines", t.Transport, t.Class, t.Lines))
			}
			fmt.Fprintf(&b, "- **%s** (NCCL %s; logs %s): %s; GDR: dma-buf %t %s; %d errors, %d warnings\n", c(n.Name), c(strings.Join(n.Versions, ", ")),
				c(strings.Join(n.Logs, ", ")), c(cmp.Or(strings.Join(ts, ", "), "no channel transport lines")), n.GDR.DMABuf, c(strings.Join(n.GDR.HCAs, ", ")), n.Errors, n.Warnings)
		}
	}
	if bn := r.Burn; bn != nil {
		state := "complete"
		if !bn.Complete {
			state = "incomplete" + c(paren(bn.Stopped))
		}
		fmt.Fprintf(&b, "\n## Burn-in\n\n%s in windows of %s, %d window(s) sampled, %s; its files: `%s` (`gdrcheck burn --replay` judges them again).\n\n", c(bn.Duration), c(bn.Window), len(bn.Windows), state, c(bn.Path))
		b.WriteString("| window | passes | moved | wrong bytes | NCCL collectives (wrong) | GPUs: SM clock MHz, power W, max °C |\n|---|---|---|---|---|---|\n")
		for _, x := range bn.Windows {
			var wrong int64
			for _, n := range x.NCCL {
				wrong += n.Wrong
			}
			var gs []string
			for _, g := range x.GPUs {
				gs = append(gs, fmt.Sprintf("%s %.0f, %.0f, %d", g.Address, g.SMClockMHz, g.PowerW, g.MaxTempC))
			}
			fmt.Fprintf(&b, "| %s | %d | %.1f GiB | %d | %d (%d) | %s |\n", c(x.Name), x.Passes, float64(x.Moved)/(1<<30), x.Wrong, len(x.NCCL), wrong, c(strings.Join(gs, "; ")))
		}
		var moved []string
		for _, row := range bn.Timeline {
			for k, cell := range row.Cells {
				if cell.Fatal+cell.Correctable > 0 || cell.State == burn.CellReset {
					moved = append(moved, fmt.Sprintf("| %s | %d | %s | %s |\n", c(cmp.Or(row.Device.Label, row.Device.Name)), k+1, cell.State, c(strings.Join(cell.Counters, ", "))))
				}
			}
		}
		if len(moved) > 0 {
			b.WriteString("\nError counters that moved during the burn-in:\n\n| device | window | what | counters |\n|---|---|---|---|\n")
			b.WriteString(strings.Join(moved, ""))
		} else if len(bn.Timeline) > 0 {
			fmt.Fprintf(&b, "\nNo judged error counter of the %d sampled device(s) moved during the burn-in (unread counters are among the judgements).\n", len(bn.Timeline))
		}
	}
	b.WriteString("\n## Checks and judgements\n\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	b.Reset()
	if err := report.WriteMarkdown(w, r.Results); err != nil {
		return err
	}
	if len(r.Artifacts) > 0 {
		b.WriteString("\n## Artifacts\n\n| name | path | kind | bytes | sha256 |\n|---|---|---|---|---|\n")
		for _, a := range r.Artifacts {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | `%s` |\n", c(a.Name), c(a.Path), c(a.Kind), a.Bytes, a.SHA256)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(v, why string) string {
	if v != "" {
		return v
	}
	if why != "" {
		return "unknown: " + why
	}
	return "unknown"
}

func libText(l Library) string {
	switch {
	case !l.Probed:
		return "not probed"
	case l.Loaded:
		return strings.TrimSpace(l.Version + " " + l.Path)
	}
	return "not loaded: " + l.Error
}

func nvlinkText(active, total int) string {
	switch {
	case total < 0:
		return "unknown"
	case total == 0:
		return "none"
	}
	return fmt.Sprintf("%d/%d active", active, total)
}

// intervalText is an interval as a table cell: "330.1–370.4 (NVLS, one
// node: 4 runs)", "-" when there is none.
func intervalText(iv *Interval) string {
	if iv == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f–%.1f (%s: %s)", iv.LowBusBW, iv.HighBusBW, iv.Class, iv.Basis)
}

func optGB(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f", *v)
}

func optPct(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100**v)
}

var _ report.PrometheusData = (*Document)(nil) // metrics.prom is report.Prometheus of the envelope

// PrometheusInfo are the node's software versions and the run's profile,
// gdrcheck_info's labels after the tool's (report.PrometheusData).
func (d *Document) PrometheusInfo() []string {
	return []string{"profile", d.Profile, "driver", d.Inventory.Driver, "cuda_runtime", d.Inventory.CUDARuntime.Version, "nccl", d.Inventory.NCCL.Version}
}

// PrometheusGauges are metrics.prom's gauges of the document: the verdict,
// whether the run finished, the GPUs and NICs, the phases, the
// measurements beside their expectations and the data paths
// (report.PrometheusData; docs/dossier.md lists them).
func (d *Document) PrometheusGauges() []*report.Gauge {
	v := d.Verdict
	ready := report.NewGauge("gdrcheck_node_ready", "1 when the node verdict is READY, else 0.")
	ready.Add(report.Bool(v.Status == checks.Ready))
	verdict := report.NewGauge("gdrcheck_node_verdict", "The node verdict: 1 for the current one of READY, DEGRADED, NOT READY.")
	for _, s := range []string{checks.Ready, checks.Degraded, checks.NotReady} {
		verdict.Add(report.Bool(v.Status == s), "verdict", s)
	}
	complete := report.NewGauge("gdrcheck_report_complete", "1 when every phase of the run finished, 0 when it was cut short.")
	complete.Add(report.Bool(d.Complete))
	gpus := report.NewGauge("gdrcheck_gpus", "GPUs discovered on the node.")
	gpus.Add(float64(len(d.Inventory.GPUs)))
	nics := report.NewGauge("gdrcheck_rdma_nics", "RDMA NICs discovered on the node.")
	nics.Add(float64(len(d.Inventory.NICs)))
	phase := report.NewGauge("gdrcheck_phase_done", "1 when the phase finished, 0 when it was skipped, failed or interrupted.")
	for _, p := range d.Phases {
		phase.Add(report.Bool(p.Status == PhaseDone), "phase", p.Name, "status", p.Status)
	}
	busbw := report.NewGauge("gdrcheck_busbw_gbps", "Measured NCCL bus bandwidth (out of place), GB/s, by collective and size in bytes.")
	busExp := report.NewGauge("gdrcheck_busbw_expected_gbps", "The model's expected NCCL bus bandwidth, GB/s, by collective and size in bytes.")
	busFrac := report.NewGauge("gdrcheck_busbw_fraction", "Measured over expected NCCL bus bandwidth, by collective and size in bytes.")
	for _, x := range d.Measurements.Collectives {
		ls := []string{"collective", x.Collective, "size", strconv.FormatUint(x.Bytes, 10)}
		busbw.Add(x.BusBW, ls...)
		if x.ExpectedBusBW != nil {
			busExp.Add(*x.ExpectedBusBW, ls...)
		}
		if x.Fraction != nil {
			busFrac.Add(*x.Fraction, ls...)
		}
	}
	copyBW := report.NewGauge("gdrcheck_copy_gbps", "Measured copy bandwidth, GB/s, by test, device and peer (-1: none).")
	copyExp := report.NewGauge("gdrcheck_copy_expected_gbps", "The model's expected copy bandwidth, GB/s, by test, device and peer.")
	copyFrac := report.NewGauge("gdrcheck_copy_fraction", "Measured over expected copy bandwidth, by test, device and peer.")
	for _, x := range d.Measurements.Copies {
		if x.Error != "" {
			continue
		}
		ls := []string{"test", x.Test, "device", strconv.Itoa(x.Device), "peer", strconv.Itoa(x.Peer)}
		copyBW.Add(x.GBps, ls...)
		if x.ExpectedGBps != nil {
			copyExp.Add(*x.ExpectedGBps, ls...)
		}
		if x.Fraction != nil {
			copyFrac.Add(*x.Fraction, ls...)
		}
	}
	paths := report.NewGauge("gdrcheck_data_path_status", "Status of each GPU's data path to the fabric (the worst hop): 0 pass, 1 skip, 2 warn, 3 unknown, 4 error, 5 fail.")
	gdr := report.NewGauge("gdrcheck_gdr_enabled", "1 when the GPU's NIC is within GPU Direct RDMA reach and GPU memory can be registered.")
	for _, p := range d.Topology.DataPaths {
		gpu := strconv.Itoa(p.GPU)
		paths.Add(float64(report.StatusCode(p.Status)), "gpu", gpu, "nic", p.NIC)
		gdr.Add(report.Bool(p.GDR == GDREnabled), "gpu", gpu, "nic", p.NIC)
	}
	// The sign-off: the node's weakest proof level, and each hop's.
	nodeProof := report.NewGauge("gdrcheck_node_proof", "How the segments the sign-off requires were established, the weakest of them: 1 for the current one of measured, checked, not-exercised, failed.")
	if v.Proof != "" {
		for _, p := range []result.Proof{result.ProofMeasured, result.ProofChecked, result.ProofNotExercised, result.ProofFailed} {
			nodeProof.Add(report.Bool(v.Proof == p), "proof", string(p))
		}
	}
	hopProof := report.NewGauge("gdrcheck_hop_proof", "How each hop of each GPU's data path was established: 3 measured, 2 checked, 1 not exercised, 0 failed.")
	for _, p := range d.Topology.DataPaths {
		for _, h := range p.Hops {
			if h.Proof != "" {
				hopProof.Add(float64(h.Proof.Rank()), "gpu", strconv.Itoa(p.GPU), "kind", h.Kind, "name", h.Name)
			}
		}
	}
	out := []*report.Gauge{ready, verdict, complete, gpus, nics, phase, busbw, busExp, busFrac, copyBW, copyExp, copyFrac, paths, gdr, nodeProof, hopProof}
	if bn := d.Burn; bn != nil {
		windows := report.NewGauge("gdrcheck_burn_windows", "Windows of the burn-in sampled and judged.")
		windows.Add(float64(len(bn.Windows)))
		events := report.NewGauge("gdrcheck_burn_error_events", "Error events the burn-in's judged counters counted over its windows, by device and class (fatal, correctable).")
		for _, row := range bn.Timeline {
			var fatal, corr uint64
			for _, cell := range row.Cells {
				fatal, corr = fatal+cell.Fatal, corr+cell.Correctable
			}
			events.Add(float64(fatal), "device", row.Device.Name, "class", "fatal")
			events.Add(float64(corr), "device", row.Device.Name, "class", "correctable")
		}
		out = append(out, windows, events)
	}
	return out
}

// sortArtifacts orders artifacts by path.
func sortArtifacts(as []Artifact) {
	slices.SortFunc(as, func(a, b Artifact) int { return strings.Compare(a.Path, b.Path) })
}

// proofSuffix is ", PROOF" for a hop with a proof level ("" for reports
// written before proof levels).
func proofSuffix(p result.Proof) string {
	if p == "" {
		return ""
	}
	return ", " + p.Phrase()
}

// paren is "(s)", or "" when s is.
func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}
