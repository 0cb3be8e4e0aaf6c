package sched

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/checks"
)

// LabelPrefix is the namespace of gdrcheck's node labels: a sub-namespace
// of feature.node.kubernetes.io, which nfd-master always allows (other
// namespaces need -extra-label-ns on releases before v0.13, and
// kubernetes.io ones are always denied).
const LabelPrefix = "gdrcheck.feature.node.kubernetes.io/"

// FeaturesFile is the file's default name in features.d.
const FeaturesFile = "gdrcheck"

// The label names, after LabelPrefix.
const (
	LabelVerdict  = "verdict"       // ready, degraded, not-ready, unknown
	LabelGDR      = "gdr"           // true, false, unknown
	LabelGDRPath  = "gdr-path"      // dmabuf, peermem, none, unknown
	LabelGPUModel = "gpu-model"     // e.g. NVIDIA-H200 (left out without GPUs)
	LabelGPUCount = "gpu-count"     // e.g. 8
	LabelNICRate  = "nic-rate-gbps" // the fastest RDMA port's rate (left out when none is known)
	LabelFailing  = "failing"       // how many checks fail
	LabelVersion  = "version"       // gdrcheck's version
)

// Labels are what the features file says of a node.
type Labels struct {
	// Verdict is checks.Ready, Degraded, NotReady, or "" when gdrcheck
	// could not judge the node.
	Verdict string
	// GDRPath is checks.GDRPath's answer ("" unknown). GDR is usable when
	// it is dmabuf or peermem and no gdr.* check fails.
	GDRPath  string
	GPUModel string
	GPUs     int
	// NICRateGbps is the fastest RDMA port's rate (0 none known).
	NICRateGbps float64
	// Failing are the IDs of the checks that made the node not ready.
	Failing []string
	Version string
}

// Features is the features.d file (Kubernetes Node Feature Discovery, the
// local source) for l: a comment, an expiry directive at now+ttl so that a
// file nobody rewrites stops labelling the node, then one
// LabelPrefix+name=value line per label, every value a valid label value
// (LabelValue). A label whose value is unknown is left out rather than
// given a guess, except verdict, gdr and gdr-path, which say "unknown".
func Features(l Labels, now time.Time, ttl time.Duration) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# gdrcheck node labels, written %s; NFD ignores them after the expiry below\n", now.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "# +expiry-time=%s\n", now.Add(ttl).UTC().Format(time.RFC3339))
	add := func(name, value string) {
		if v := LabelValue(value); v != "" {
			b.WriteString(LabelPrefix + name + "=" + v + "\n")
		}
	}
	verdict := map[string]string{checks.Ready: "ready", checks.Degraded: "degraded", checks.NotReady: "not-ready"}[l.Verdict]
	add(LabelVerdict, cmp.Or(verdict, "unknown"))
	if l.Verdict != "" {
		gdr := "unknown"
		switch l.GDRPath {
		case checks.GDRDMABuf, checks.GDRPeermem:
			gdr = strconv.FormatBool(!slices.ContainsFunc(l.Failing, func(id string) bool { return strings.HasPrefix(id, "gdr.") }))
		case checks.GDRNone:
			gdr = "false"
		}
		add(LabelGDR, gdr)
		add(LabelGDRPath, cmp.Or(l.GDRPath, "unknown"))
		add(LabelGPUModel, l.GPUModel)
		add(LabelGPUCount, strconv.Itoa(l.GPUs))
		if l.NICRateGbps > 0 {
			add(LabelNICRate, strconv.FormatFloat(l.NICRateGbps, 'f', -1, 64))
		}
		add(LabelFailing, strconv.Itoa(len(l.Failing)))
	}
	add(LabelVersion, l.Version)
	return []byte(b.String())
}

// MaxLabelValue is the longest Kubernetes label value.
const MaxLabelValue = 63

// LabelValue makes s a valid Kubernetes label value: at most 63
// characters of [A-Za-z0-9._-], beginning and ending with a letter or
// digit. Other characters become "-" (a run of them one "-"); "" when
// nothing of s is left.
func LabelValue(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-':
			b.WriteRune(r)
			dash = r == '-'
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	v := strings.TrimFunc(b.String(), notAlnum)
	if len(v) > MaxLabelValue {
		v = strings.TrimRightFunc(v[:MaxLabelValue], notAlnum)
	}
	return v
}

func notAlnum(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
}
