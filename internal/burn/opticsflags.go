package burn

import (
	"fmt"
	"strings"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// flagVerdict is what a flag raised during a window does, by its kind
// (cf.Flag.Kind): an alarm, a loss of signal or a Tx fault fails; a
// warning, a CDR loss of lock or an adaptive-equalisation fault warns.
var flagVerdict = map[string]struct {
	status result.Status
	reason string
}{
	cf.FlagAlarm:   {result.Fail, "ModuleAlarm"},
	cf.FlagLOS:     {result.Fail, "LossOfSignal"},
	cf.FlagTxFault: {result.Fail, "TxFault"},
	cf.FlagWarning: {result.Warn, "ModuleWarning"},
	cf.FlagLOL:     {result.Warn, "LossOfLock"},
	cf.FlagEqFault: {result.Warn, "TxEqFault"},
}

// flagKey is one flag of one lane (0: the module's).
type flagKey struct {
	name string
	lane int
}

// flagJudgement is what the module's own flags showed over the burn-in.
type flagJudgement struct {
	findings []finding
	// before is the burn.before result for flags On before the workload,
	// nil when none was.
	before *result.Result
	// read is how many window ends printed flags; most the most printed
	// at one; cmisLanes says CMIS per-lane alarm or warning lines were
	// among them, which do not show every lane (cf.DDM.LaneCertain).
	read, most int
	cmisLanes  bool
	// carried are the flags On since before the workload, not judged.
	carried []string
}

// judgeFlags judges the module's own flags at every window's end.
// SFF-8636 and CMIS flags latch until read, and each sample's ethtool -m
// reads them, so a flag On at a window's end was raised since the sample
// before: during that window. A flag On before the workload, and On at
// every read from then to this window's end, may be the same condition
// held throughout (a dark lane's loss of signal): it is reported as
// burn.before, not judged; once a read shows it Off, its next On is new.
// Flags of a lane dark before the workload are not judged, as its power
// is not. No window's end printing flags is unknown, never a pass.
func judgeFlags(subj, dev string, port int, s Schedule, after, before []*cf.Sample, dark func(lane int) bool) flagJudgement {
	var j flagJudgement
	// Flags On in each sample before the workload; carry holds those On
	// at the last of them that printed flags (lastBefore).
	beforeOn := map[flagKey][]string{}
	var beforeOrder []flagKey
	carry := map[flagKey]bool{}
	lastBefore, lastBeforeAt := "", -1
	for bi, sm := range before {
		m := moduleOf(sm, dev, port)
		if m == nil || m.DDM == nil || len(m.DDM.Flags) == 0 {
			continue
		}
		label := cmpOr(sm.Label, fmt.Sprintf("sample %d before the workload", bi+1))
		lastBefore, lastBeforeAt = label, bi
		clear(carry)
		for _, f := range m.DDM.Flags {
			if !f.On {
				continue
			}
			k := flagKey{f.Name, f.Lane}
			if _, ok := beforeOn[k]; !ok {
				beforeOrder = append(beforeOrder, k)
			}
			beforeOn[k] = append(beforeOn[k], label)
			carry[k] = true
		}
	}
	// Window 1's flags were latched since the last reading before the
	// workload: the settle time too when the last sample did not read them.
	firstSince := "during the window"
	if len(before) == 0 || lastBeforeAt < len(before)-1 {
		firstSince = "since the module's flags were last read before the workload"
		if lastBefore != "" {
			firstSince += " (" + lastBefore + ")"
		}
	}
	carriedTo := map[flagKey][]string{}
	var unread []string // window ends that printed no flags, and why
	lastRead := -1      // the last window whose end printed flags
	for i, sm := range after {
		name := s.Name(i)
		m := moduleOf(sm, dev, port)
		if m == nil || m.DDM == nil || !m.DDM.Monitored() {
			continue // the module's own verdict says why
		}
		d := m.DDM
		if len(d.Flags) == 0 {
			why := "ethtool printed no alarm, warning or status flag"
			if d.FlagsImplemented != nil && !*d.FlagsImplemented {
				why = "the module says its alarm and warning flags are not implemented"
			}
			unread = append(unread, name+": "+why)
			continue
		}
		j.read++
		j.most = max(j.most, len(d.Flags))
		for _, f := range d.Flags {
			if !d.LaneCertain(f) {
				j.cmisLanes = true
				break
			}
		}
		// A flag carried from before the workload that reads Off here has
		// cleared: its next On is a new event.
		for k := range carry {
			if on, read := d.Flag(k.name, k.lane); read && !on {
				delete(carry, k)
			}
		}
		since := "during the window"
		switch {
		case lastRead >= 0 && lastRead < i-1:
			since = "since they were read at the end of " + s.Name(lastRead)
		case lastRead < 0:
			since = firstSince
			if i > 0 {
				since = strings.Replace(firstSince, "during the window", "since the module's flags were last read before the workload", 1)
			}
		}
		if d.Layout == cf.LayoutSFF8472 {
			since = "at the window's end (SFF-8472 flags are not latched: the condition held at the reading)"
		}
		for _, f := range d.Flags {
			if !f.On {
				continue
			}
			k := flagKey{f.Name, f.Lane}
			if carry[k] {
				carriedTo[k] = append(carriedTo[k], name)
				continue
			}
			v, ok := flagVerdict[f.Kind()]
			if !ok {
				continue
			}
			certain := d.LaneCertain(f)
			where := ""
			switch {
			case f.Lane == 0:
			case certain && dark(f.Lane):
				continue
			case certain:
				where = fmt.Sprintf("lane %d: ", f.Lane)
			default:
				shown := "lane 1"
				if ls := cf.CMISFlagLanes(f.Lane); len(ls) > 0 {
					shown = "lane(s) " + joinInts(ls)
				}
				where = fmt.Sprintf("a lane (ethtool's line for lane %d, which for CMIS shows %s): ", f.Lane, shown)
			}
			j.findings = append(j.findings, finding{v.status, v.reason, fmt.Sprintf("%s: %s%s raised %s", name, where, f.Name, since)})
		}
		lastRead = i
	}
	for k := range carry {
		if len(carriedTo[k]) > 0 {
			j.carried = append(j.carried, flagText(k))
		}
	}
	switch {
	case len(unread) > 0 && j.read == 0:
		j.findings = append(j.findings, finding{result.Unknown, "FlagsUnread", "the module's own alarm, warning and status flags were not read: " + strings.Join(byReason(unread), "; ")})
	case len(unread) > 0:
		j.findings = append(j.findings, finding{result.Unknown, "FlagsUnread", "the module's own flags were not read in " + strings.Join(byReason(unread), "; ")})
	}
	if len(beforeOrder) > 0 {
		var items []string
		for _, k := range beforeOrder {
			it := fmt.Sprintf("%s (%s", flagText(k), strings.Join(beforeOn[k], ", "))
			if ws := carriedTo[k]; len(ws) > 0 {
				it += "; still On at the end of " + strings.Join(compact(ws), ", ")
			}
			items = append(items, it+")")
		}
		j.before = &result.Result{ID: IDBefore, Source: Source, Status: result.Skip, Subject: subj, Reason: "ModuleFlagsBefore",
			Message: "the module's own flags On before the workload (latched since the module was last read: boot, link training, a cable moved), not judged; one still On at every read since may be the same condition held throughout: " + strings.Join(items, ", ")}
	}
	return j
}

// flagText names a flag with its lane: "Rx loss of signal (lane 2)".
func flagText(k flagKey) string {
	if k.lane == 0 {
		return k.name
	}
	return fmt.Sprintf("%s (lane %d)", k.name, k.lane)
}

// joinInts is "1, 2 and 3".
func joinInts(ns []int) string {
	var ss []string
	for _, n := range ns {
		ss = append(ss, fmt.Sprint(n))
	}
	if len(ss) < 2 {
		return strings.Join(ss, "")
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " and " + ss[len(ss)-1]
}
