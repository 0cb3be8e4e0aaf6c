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
		{MetricsProm, WritePrometheus},
	}
}

// WriteJUnit writes every result as a JUnit test case (report.WriteJUnit),
// for CI pipelines.
func WriteJUnit(w io.Writer, r *Report) error {
	return report.WriteJUnit(w, "gdrcheck", r.Results, r.Run.EndedAt.Sub(r.Run.StartedAt))
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
	c, l := printable.Cell, printable.Line
	v := r.Verdict
	fmt.Fprintf(&b, "# gdrcheck: %s — %s\n\n", l(cmp.Or(r.Inventory.Host, v.Host, "(unknown host)")), v.Status)
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
		b.WriteString("\n## Data paths\n\nEach GPU's path to the fabric, hop by hop, with the status of the evidence at each hop (unknown: nothing looked at it).\n\n| GPU | GDR | path |\n|---|---|---|\n")
		for _, p := range r.Topology.DataPaths {
			var hops []string
			for _, h := range p.Hops {
				hops = append(hops, fmt.Sprintf("%s %s (%s)", h.Kind, h.Name, h.Status))
			}
			gdr := p.GDR
			if p.GDRWhy != "" {
				gdr += ": " + p.GDRWhy
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
	m := r.Measurements
	b.WriteString("\n## Measurements\n\n")
	if m.Basis != "" {
		fmt.Fprintf(&b, "Expected: %s; a measurement passes at %.0f%% of expected.\n\n", c(m.Basis), 100*m.Pass)
	}
	if len(m.Collectives) == 0 && len(m.Copies) == 0 {
		b.WriteString("None: no benchmark ran (see Phases for why).\n")
	}
	if len(m.Collectives) > 0 {
		b.WriteString("| collective | size | ranks | busbw GB/s | expected | fraction | status |\n|---|---|---|---|---|---|---|\n")
		for _, x := range m.Collectives {
			fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %s | %s | %s |\n", c(x.Collective), collective.FormatSize(x.Bytes), x.Ranks, x.BusBW, optGB(x.ExpectedBusBW), optPct(x.Fraction), x.Status)
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

// StatusCode is a status as the number metrics.prom carries, worst
// highest: 0 pass, 1 skip, 2 warn, 3 unknown, 4 error, 5 fail.
func StatusCode(s result.Status) int {
	switch s {
	case result.Pass:
		return 0
	case result.Skip:
		return 1
	case result.Warn:
		return 2
	case result.Unknown:
		return 3
	case result.Error:
		return 4
	}
	return 5
}

// metric is one metric family of metrics.prom.
type metric struct {
	name, help string
	samples    []sample
}

type sample struct {
	labels [][2]string
	value  float64
}

func (m *metric) add(v float64, labels ...string) {
	var ls [][2]string
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, [2]string{labels[i], labels[i+1]})
	}
	m.samples = append(m.samples, sample{ls, v})
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func (m *metric) write(b *strings.Builder) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s gauge\n", m.name, m.help, m.name)
	for _, s := range m.samples {
		b.WriteString(m.name)
		if len(s.labels) > 0 {
			b.WriteByte('{')
			for i, l := range s.labels {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(b, `%s="%s"`, l[0], labelEscaper.Replace(l[1]))
			}
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(s.value, 'g', -1, 64))
		b.WriteByte('\n')
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// WritePrometheus writes metrics.prom in the node_exporter textfile
// collector's format: one gauge family per metric, with HELP and TYPE,
// names and labels documented in docs/dossier.md and kept stable. A
// result judged twice for one id, subject and source (a check with two
// findings on one subject) is one sample with the worse status.
func WritePrometheus(w io.Writer, r *Report) error {
	v := r.Verdict
	ready := &metric{name: "gdrcheck_node_ready", help: "1 when the node verdict is READY, else 0."}
	ready.add(boolValue(v.Status == checks.Ready))
	verdict := &metric{name: "gdrcheck_node_verdict", help: "The node verdict: 1 for the current one of READY, DEGRADED, NOT READY."}
	for _, s := range []string{checks.Ready, checks.Degraded, checks.NotReady} {
		verdict.add(boolValue(v.Status == s), "verdict", s)
	}
	complete := &metric{name: "gdrcheck_report_complete", help: "1 when every phase of the run finished, 0 when it was cut short."}
	complete.add(boolValue(r.Complete))
	ended := &metric{name: "gdrcheck_report_timestamp_seconds", help: "When the run ended, in seconds since the epoch."}
	ended.add(float64(r.Run.EndedAt.Unix()))
	duration := &metric{name: "gdrcheck_run_duration_seconds", help: "How long the run took."}
	duration.add(r.Run.EndedAt.Sub(r.Run.StartedAt).Seconds())
	info := &metric{name: "gdrcheck_info", help: "Always 1: the tool and the node's software versions as labels."}
	info.add(1, "version", r.Run.Version, "commit", r.Run.Commit, "profile", r.Profile, "driver", r.Inventory.Driver,
		"cuda_runtime", r.Inventory.CUDARuntime.Version, "nccl", r.Inventory.NCCL.Version)
	gpus := &metric{name: "gdrcheck_gpus", help: "GPUs discovered on the node."}
	gpus.add(float64(len(r.Inventory.GPUs)))
	nics := &metric{name: "gdrcheck_rdma_nics", help: "RDMA NICs discovered on the node."}
	nics.add(float64(len(r.Inventory.NICs)))
	phase := &metric{name: "gdrcheck_phase_done", help: "1 when the phase finished, 0 when it was skipped, failed or interrupted."}
	for _, p := range r.Phases {
		phase.add(boolValue(p.Status == PhaseDone), "phase", p.Name, "status", p.Status)
	}
	counts := &metric{name: "gdrcheck_results", help: "Results of the run by status."}
	cnt := result.Count(r.Results)
	for _, s := range []result.Status{result.Pass, result.Warn, result.Fail, result.Skip, result.Unknown, result.Error} {
		counts.add(float64(cnt[s]), "status", string(s))
	}
	status := &metric{name: "gdrcheck_check_status", help: "Status of each check (and judgement) on each subject: 0 pass, 1 skip, 2 warn, 3 unknown, 4 error, 5 fail."}
	type key struct{ id, subject, source string }
	worst := map[key]int{}
	var order []key
	for _, x := range r.Results {
		k := key{x.ID, x.Subject, x.Source}
		c, seen := worst[k]
		if !seen {
			order = append(order, k)
		}
		worst[k] = max(c, StatusCode(x.Status))
	}
	for _, k := range order {
		status.add(float64(worst[k]), "id", k.id, "subject", k.subject, "source", k.source)
	}
	busbw := &metric{name: "gdrcheck_busbw_gbps", help: "Measured NCCL bus bandwidth (out of place), GB/s, by collective and size in bytes."}
	busExp := &metric{name: "gdrcheck_busbw_expected_gbps", help: "The model's expected NCCL bus bandwidth, GB/s, by collective and size in bytes."}
	busFrac := &metric{name: "gdrcheck_busbw_fraction", help: "Measured over expected NCCL bus bandwidth, by collective and size in bytes."}
	for _, x := range r.Measurements.Collectives {
		ls := []string{"collective", x.Collective, "size", strconv.FormatUint(x.Bytes, 10)}
		busbw.add(x.BusBW, ls...)
		if x.ExpectedBusBW != nil {
			busExp.add(*x.ExpectedBusBW, ls...)
		}
		if x.Fraction != nil {
			busFrac.add(*x.Fraction, ls...)
		}
	}
	copyBW := &metric{name: "gdrcheck_copy_gbps", help: "Measured copy bandwidth, GB/s, by test, device and peer (-1: none)."}
	copyExp := &metric{name: "gdrcheck_copy_expected_gbps", help: "The model's expected copy bandwidth, GB/s, by test, device and peer."}
	copyFrac := &metric{name: "gdrcheck_copy_fraction", help: "Measured over expected copy bandwidth, by test, device and peer."}
	for _, x := range r.Measurements.Copies {
		if x.Error != "" {
			continue
		}
		ls := []string{"test", x.Test, "device", strconv.Itoa(x.Device), "peer", strconv.Itoa(x.Peer)}
		copyBW.add(x.GBps, ls...)
		if x.ExpectedGBps != nil {
			copyExp.add(*x.ExpectedGBps, ls...)
		}
		if x.Fraction != nil {
			copyFrac.add(*x.Fraction, ls...)
		}
	}
	paths := &metric{name: "gdrcheck_data_path_status", help: "Status of each GPU's data path to the fabric (the worst hop): 0 pass, 1 skip, 2 warn, 3 unknown, 4 error, 5 fail."}
	gdr := &metric{name: "gdrcheck_gdr_enabled", help: "1 when the GPU's NIC is within GPU Direct RDMA reach and GPU memory can be registered."}
	for _, p := range r.Topology.DataPaths {
		gpu := strconv.Itoa(p.GPU)
		paths.add(float64(StatusCode(p.Status)), "gpu", gpu, "nic", p.NIC)
		gdr.add(boolValue(p.GDR == GDREnabled), "gpu", gpu, "nic", p.NIC)
	}
	var b strings.Builder
	for _, m := range []*metric{ready, verdict, complete, ended, duration, info, gpus, nics, phase, counts, status, busbw, busExp, busFrac, copyBW, copyExp, copyFrac, paths, gdr} {
		if len(m.samples) > 0 {
			m.write(&b)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sortArtifacts orders artifacts by path.
func sortArtifacts(as []Artifact) {
	slices.SortFunc(as, func(a, b Artifact) int { return strings.Compare(a.Path, b.Path) })
}
