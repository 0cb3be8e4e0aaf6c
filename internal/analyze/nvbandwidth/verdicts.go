package nvbandwidth

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Verdict IDs.
const (
	IDTestcase = "nvbandwidth.testcase"
	IDRun      = "nvbandwidth.run"
)

// OutlierShare: a bandwidth cell below this share of the matrix median is
// an outlier. AsymmetryShare: a GPU pair whose two directions differ more
// than this (smaller/larger below it) is asymmetric. Latency cells above
// LatencyOutlier times the median are outliers.
const (
	OutlierShare   = 0.8
	AsymmetryShare = 0.8
	LatencyOutlier = 1.5
)

func (tc *Testcase) label(i, j int) (string, string) {
	r, c := fmt.Sprint(i), fmt.Sprint(j)
	if i < len(tc.RowIDs) {
		r = fmt.Sprint(tc.RowIDs[i])
	}
	if j < len(tc.Columns) {
		c = fmt.Sprint(tc.Columns[j])
	}
	if tc.RowKind == "All" {
		return "all GPUs", tc.ColKind + c
	}
	return tc.RowKind + r, tc.ColKind + c
}

func (tc *Testcase) pair(i, j int) string {
	a, b := tc.label(i, j)
	dir := tc.Direction
	if dir == "" {
		dir = "->"
	}
	return a + " " + dir + " " + b
}

// validationRemedy is what to do when a copy returns wrong data.
const validationRemedy = "a copy that returns wrong data is a hardware or driver fault, not slowness: look for Xid, ECC and PCIe AER errors for the GPUs involved (dmesg, nvidia-smi -q), run dcgmi diag -r 3, and rerun the testcase alone with a smaller --bufferSize to see whether it repeats on the same GPU pair"

func verdicts(name string, rep *Report) []result.Result {
	var out []result.Result
	for _, tc := range rep.Testcases {
		out = append(out, testcaseVerdict(name, tc))
	}
	switch {
	case len(rep.Failures) > 0:
		v := verdict.New(IDRun, result.Fail, "run", "ValidationFailed", "nvbandwidth's check of the copied data failed: "+rep.Failures[0].Text, verdict.Quotes(name, rep.Failures)...)
		v.Remedy = validationRemedy
		out = append(out, v)
	case len(rep.Errors) > 0:
		v := verdict.New(IDRun, result.Error, "run", "RunError", "nvbandwidth reported an error: "+rep.Errors[0].Text, verdict.Quotes(name, rep.Errors)...)
		v.Remedy = "check the CUDA driver and that the GPUs are visible to the process (nvidia-smi, CUDA_VISIBLE_DEVICES)"
		out = append(out, v)
	case len(rep.Testcases) == 0:
		out = append(out, verdict.New(IDRun, result.Unknown, "run", "NoTestcases", "the output has the version block but no testcase"))
	default:
		out = append(out, verdict.New(IDRun, result.Pass, "run", "Completed", fmt.Sprintf("%d testcase(s)", len(rep.Testcases))))
	}
	return out
}

func testcaseVerdict(name string, tc *Testcase) result.Result {
	subj := tc.Name
	if subj == "" {
		subj = tc.Description
	}
	if subj == "" {
		subj = "(unnamed testcase)"
	}
	ev := []result.Evidence{verdict.Ev(name, tc.Line, tc.Description, "")}
	switch {
	case tc.Status == "Waived":
		why := tc.Error
		if why == "" {
			why = "its requirements are not met here (too few GPUs, no peer access, or an unsupported engine)"
		}
		return verdict.New(IDTestcase, result.Skip, subj, "Waived", "nvbandwidth waived the testcase: "+why)
	case tc.Status == "Failed":
		v := verdict.New(IDTestcase, result.Fail, subj, "ValidationFailed", "the data this testcase copied did not read back as written: "+tc.Error, verdict.Ev(name, tc.errLine, tc.Error, ""))
		v.Remedy = validationRemedy
		return v
	case tc.Status == "Not Found":
		return verdict.New(IDTestcase, result.Skip, subj, "NotFound", "nvbandwidth does not know the testcase")
	case tc.Status == "Error" || (tc.Error != "" && len(tc.Matrix) == 0):
		v := verdict.New(IDTestcase, result.Error, subj, "TestcaseError", "the testcase failed to run: "+tc.Error, verdict.Ev(name, tc.errLine, tc.Error, ""))
		v.Remedy = "check the CUDA error named; peer-to-peer testcases need P2P access between the GPUs (nvidia-smi topo -p2p r)"
		return v
	case tc.Max == 0 && tc.Min == 0:
		return verdict.New(IDTestcase, result.Unknown, subj, "NoMatrix", "no measured cell (the matrix is missing or all N/A)")
	}
	unit := tc.Unit
	if unit == "" {
		unit = "GB/s"
	}
	stat := fmt.Sprintf("%d measured cells, min %s / median %s / max %s %s", cells(tc), fmtF(tc.Min), fmtF(tc.Median), fmtF(tc.Max), unit)
	if tc.Sum != nil {
		stat += fmt.Sprintf(", SUM %s", fmtF(*tc.Sum))
	}
	latency := strings.EqualFold(unit, "ns") || strings.EqualFold(unit, "us")
	var findings []string
	reason := ""
	for i, row := range tc.Matrix {
		for j, c := range row {
			if c == nil || tc.Median <= 0 {
				continue
			}
			bad := (!latency && *c < OutlierShare*tc.Median) || (latency && *c > LatencyOutlier*tc.Median)
			if bad {
				if reason == "" {
					reason = "OutlierCells"
				}
				findings = append(findings, fmt.Sprintf("%s %s %s (%.0f%% of the median)", tc.pair(i, j), fmtF(*c), unit, 100**c/tc.Median))
				ev = append(ev, verdict.Ev(name, tc.rowLine(i), fmt.Sprintf("%s: %s %s", tc.pair(i, j), fmtF(*c), unit), "outlier"))
			}
		}
	}
	if tc.RowKind == "GPU" && tc.ColKind == "GPU" && !latency {
		for i := range tc.Matrix {
			for j := i + 1; j < len(tc.Matrix[i]); j++ {
				a := tc.Matrix[i][j]
				ri := indexOf(tc.RowIDs, at(tc.Columns, j))
				ci := indexOf(tc.Columns, at(tc.RowIDs, i))
				if a == nil || ri < 0 || ci < 0 || ci >= len(tc.Matrix[ri]) || tc.Matrix[ri][ci] == nil {
					continue
				}
				b := tc.Matrix[ri][ci]
				hi, lo := max(*a, *b), min(*a, *b)
				if hi > 0 && lo/hi < AsymmetryShare {
					if reason == "" {
						reason = "Asymmetric"
					}
					findings = append(findings, fmt.Sprintf("%s %s vs the reverse %s %s", tc.pair(i, j), fmtF(*a), fmtF(*b), unit))
					ev = append(ev, verdict.Ev(name, tc.rowLine(i), fmt.Sprintf("%s: %s, %s: %s %s", tc.pair(i, j), fmtF(*a), tc.pair(ri, ci), fmtF(*b), unit), "asymmetric pair"))
				}
			}
		}
	}
	if reason != "" {
		if len(findings) > 8 {
			findings = append(findings[:8], fmt.Sprintf("and %d more", len(findings)-8))
		}
		v := verdict.New(IDTestcase, result.Warn, subj, reason, stat+"; "+strings.Join(findings, "; "), ev...)
		v.Remedy = "compare the slow pairs with nvidia-smi topo -m (NV# count, PCIe path) and nvidia-smi nvlink -s / -e; a pair well below the rest usually has fewer NVLinks up, a downgraded PCIe link or a path through the CPU"
		return v
	}
	return verdict.New(IDTestcase, result.Pass, subj, "Measured", stat+"; no outlier or asymmetric cell", ev...)
}

func (tc *Testcase) rowLine(i int) int {
	if i < len(tc.RowLines) {
		return tc.RowLines[i]
	}
	return tc.Line
}

func at(s []int, i int) int {
	if i < len(s) {
		return s[i]
	}
	return i
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	if len(s) == 0 {
		return v
	}
	return -1
}

func cells(tc *Testcase) int {
	n := 0
	for _, r := range tc.Matrix {
		for _, c := range r {
			if c != nil {
				n++
			}
		}
	}
	return n
}

// WriteText prints the verdicts, then each testcase's matrix.
func (r *Report) WriteText(w io.Writer, vs []result.Result) error {
	var b strings.Builder
	if !r.Paste.Empty() {
		fmt.Fprintf(&b, "\n%s\n", r.Paste)
	}
	var facts []string
	for _, f := range []struct{ k, v string }{{"nvbandwidth", r.Version}, {"driver", r.DriverVersion}, {"CUDA runtime", r.CUDARuntime}, {"host", r.Hostname}} {
		if f.v != "" {
			facts = append(facts, f.k+" "+f.v)
		}
	}
	if len(facts) > 0 {
		fmt.Fprintf(&b, "\n%s\n", strings.Join(facts, ", "))
	}
	for _, d := range r.Devices {
		fmt.Fprintf(&b, "  device %d: %s %s\n", d.Index, d.Name, d.BusID)
	}
	for _, tc := range r.Testcases {
		fmt.Fprintf(&b, "\n%s: %s\n", tc.Name, tc.Description)
		if len(tc.Matrix) == 0 {
			fmt.Fprintf(&b, "  no matrix (%s %s)\n", tc.Status, tc.Error)
			continue
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "  \t")
		for _, c := range tc.Columns {
			fmt.Fprintf(tw, "%d\t", c)
		}
		fmt.Fprintln(tw)
		for i, row := range tc.Matrix {
			fmt.Fprintf(tw, "  %d\t", at(tc.RowIDs, i))
			for _, c := range row {
				if c == nil {
					fmt.Fprint(tw, "N/A\t")
				} else {
					fmt.Fprintf(tw, "%.2f\t", *c)
				}
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if tc.Sum != nil {
			fmt.Fprintf(&b, "  SUM %s (cells add up to %s)\n", fmtF(*tc.Sum), fmtF(tc.SumComputed))
		}
	}
	return (verdict.Text{}).Page(w, "", vs, b.String())
}
