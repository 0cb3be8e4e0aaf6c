// Package diff compares two commissioning dossiers (report.json, package
// dossier): what changed between two runs of one node or between two
// nodes, in versions, settings, topology, check results and measurements,
// and whether something got worse. It is pure: Compare reads two decoded
// reports and returns the changes; the renderers print them. docs/diff.md
// describes the rules, the noise model above all.
package diff

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/report/noise"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Sections, in the order they are printed.
const (
	SectionVersions     = "versions"
	SectionSettings     = "settings"
	SectionTopology     = "topology"
	SectionChecks       = "checks"
	SectionMeasurements = "measurements"
)

var sectionOrder = []string{SectionVersions, SectionSettings, SectionTopology, SectionChecks, SectionMeasurements}

// Effects of a change.
const (
	Worse   = "worse"   // the node lost something: exit 1
	Better  = "better"  // the node gained something
	Changed = "changed" // different, neither better nor worse (a version, a setting)
)

// Change is one difference between OLD and NEW.
type Change struct {
	Section string `json:"section"`
	// Subject is what changed: "driver", "GPU 0000:18:00.0",
	// "nic.port mlx5_0/1", "nccl.all_reduce.67108864 (8 ranks)".
	Subject string `json:"subject"`
	// Field is the attribute of Subject that changed ("" for the subject
	// as a whole: added or removed).
	Field string `json:"field,omitempty"`
	Old   string `json:"old"`
	New   string `json:"new"`
	// Delta is the relative change of a number, e.g. "-20.0%".
	Delta  string `json:"delta,omitempty"`
	Effect string `json:"effect"`
	// Reason says why the change counts as it does.
	Reason string `json:"reason"`
}

// Side names one of the two reports.
type Side struct {
	Source    string `json:"source"` // the path it was read from
	Host      string `json:"host"`   // the judged node
	StartedAt string `json:"started_at"`
	Tool      string `json:"tool"`
	Verdict   string `json:"verdict"`
}

// Diff is the comparison of two reports.
type Diff struct {
	Old Side `json:"old"`
	New Side `json:"new"`
	// Changes are sorted: worse first, then by section, subject and field.
	Changes []Change `json:"changes"`
	// Compared counts the measurements found in both reports, Moved those
	// that moved beyond their noise (either way).
	Compared int `json:"measurements_compared"`
	Moved    int `json:"measurements_moved"`
	// OnlyOld and OnlyNew are measurements present in one report only
	// (another profile, a GPU added or lost): not compared.
	OnlyOld []string `json:"measurements_only_old"`
	OnlyNew []string `json:"measurements_only_new"`
	// Noise is the rule measurements were compared under.
	Noise Options `json:"noise"`
	// Hardware is set when the two reports are of different kinds of
	// node (their GPU models differ): their GPUs, NICs, paths and
	// measurements are then not compared, only versions, settings and
	// checks.
	Hardware *Hardware `json:"different_hardware,omitempty"`
}

// Hardware names the two reports' hardware classes.
type Hardware struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// Worse reports whether anything got worse.
func (d *Diff) Worse() bool {
	for _, c := range d.Changes {
		if c.Effect == Worse {
			return true
		}
	}
	return false
}

// Count is the number of changes with the given effect.
func (d *Diff) Count(effect string) int {
	n := 0
	for _, c := range d.Changes {
		if c.Effect == effect {
			n++
		}
	}
	return n
}

// Options is the noise model (internal/report/noise): how far a
// measurement may move between two runs of the same healthy node and still
// count as unchanged. A measurement moved when new/old lies outside
// [1/(1+f), 1+f] for its floor f, widened by the spread between its
// in-place and out-of-place runs where both were measured on more than one
// rank.
type Options = noise.Options

// DefaultOptions are the floors docs/diff.md argues for.
func DefaultOptions() Options { return noise.DefaultOptions() }

// Compare compares old with new; the sources name them (their paths).
func Compare(old, new *dossier.Report, oldSource, newSource string, opts Options) *Diff {
	d := &Diff{Old: side(old, oldSource), New: side(new, newSource), Noise: opts, Changes: []Change{}, OnlyOld: []string{}, OnlyNew: []string{}}
	c := &comparer{d: d, opts: opts}
	c.versions(old, new)
	c.settings(old, new)
	om, nm := old.Inventory.GPUModel(), new.Inventory.GPUModel()
	if om != "" && nm != "" && om != nm {
		// Two kinds of node: every GPU and NIC would read as lost and
		// found, every measurement as only in one.
		d.Hardware = &Hardware{Old: old.Inventory.Class(), New: new.Inventory.Class()}
	} else {
		c.topology(old, new)
	}
	c.checks(old, new)
	if d.Hardware == nil {
		c.measurements(old, new)
	}
	sort.SliceStable(d.Changes, func(i, j int) bool {
		a, b := d.Changes[i], d.Changes[j]
		if ra, rb := effectRank(a.Effect), effectRank(b.Effect); ra != rb {
			return ra < rb
		}
		if sa, sb := sectionRank(a.Section), sectionRank(b.Section); sa != sb {
			return sa < sb
		}
		if a.Subject != b.Subject {
			return a.Subject < b.Subject
		}
		return a.Field < b.Field
	})
	sort.Strings(d.OnlyOld)
	sort.Strings(d.OnlyNew)
	return d
}

func side(r *dossier.Report, source string) Side {
	s := Side{Source: source, Host: r.Inventory.Host, Tool: r.Run.Version + " (" + r.Run.Commit + ")", Verdict: r.Verdict.Status}
	if !r.Run.StartedAt.IsZero() {
		s.StartedAt = r.Run.StartedAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	return s
}

func effectRank(e string) int {
	switch e {
	case Worse:
		return 0
	case Better:
		return 1
	}
	return 2
}

func sectionRank(s string) int {
	for i, x := range sectionOrder {
		if x == s {
			return i
		}
	}
	return len(sectionOrder)
}

type comparer struct {
	d    *Diff
	opts Options
}

func (c *comparer) add(ch Change) { c.d.Changes = append(c.d.Changes, ch) }

// value is how an absent value prints.
func value(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// field adds a change when old and new differ, with the given effect.
func (c *comparer) field(section, subject, field, old, new, effect, reason string) {
	if old == new {
		return
	}
	c.add(Change{Section: section, Subject: subject, Field: field, Old: value(old), New: value(new), Effect: effect, Reason: reason})
}

// verdictRank orders the node verdicts: higher is worse; -1 unknown.
func verdictRank(v string) int {
	switch v {
	case checks.Ready:
		return 0
	case checks.Degraded:
		return 1
	case checks.NotReady:
		return 2
	}
	return -1
}

// statusRank orders judged statuses: higher is worse; -1 for statuses
// that judge nothing (skip, unknown).
func statusRank(s result.Status) int {
	switch s {
	case result.Pass:
		return 0
	case result.Warn:
		return 1
	case result.Fail, result.Error:
		return 2
	}
	return -1
}

// byRank is the effect of a move between two ranks (higher worse), and
// its reason.
func byRank(old, new int) string {
	switch {
	case old < 0 || new < 0:
		return Changed
	case new > old:
		return Worse
	case new < old:
		return Better
	}
	return Changed
}

func pct(old, new float64) string {
	if old == 0 {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", (new/old-1)*100)
}

// num prints a measured number to about four significant digits.
func num(v float64) string {
	var s string
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		s = fmt.Sprintf("%.2f", v)
	default:
		s = fmt.Sprintf("%.4f", v)
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// sortedKeys are the union of two maps' keys, sorted.
func sortedKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	var ks []string
	for _, m := range []map[string]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	sort.Strings(ks)
	return ks
}
