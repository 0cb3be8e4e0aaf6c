package fleet

import (
	"bytes"
	"slices"
	"strings"
)

// Setting is one node setting the roll-up compares across a class, read
// from the report's check results (report.json records settings only as
// the evidence and messages of the checks that judged them).
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// The settings' names (Consistency.Field is "setting " and the name).
const (
	SettingMemlock  = "memlock"       // limits.memlock: unlimited, or N KiB
	SettingIOMMU    = "iommu"         // iommu.mode: the modes of the node's GPUs and NICs (IOMMUOff, Passthrough, TranslatedDMA, ...)
	SettingCmdline  = "cmdline iommu" // iommu.mode: the IOMMU parameters of the kernel command line
	SettingPeermem  = "nvidia_peermem"
	SettingDMABuf   = "dma-buf"  // gdr.kernel-module: whether dma-buf registration is possible
	SettingACS      = "pcie acs" // pcie.acs: the findings over the bridges that carry peer traffic
	SettingMRR      = "pcie mrr" // pcie.mrr: the NICs' MaxPayload and MaxReadReq
	notReported     = "not reported"
	settingNCCLPref = "NCCL_"
)

var (
	// settingChecks are the IDs of the checks whose results carry settings.
	settingChecks = []string{"nccl.env", "limits.memlock", "iommu.mode", "gdr.kernel-module", "pcie.acs", "pcie.mrr"}

	resultNames   = []string{"id", "status", "reason", "message", "evidence"}
	evidenceNames = []string{"source", "value"}
)

// settingsReader collects a node's settings from its results: a few
// entries, searched linearly (no maps: this runs for every report).
type settingsReader struct {
	envSeen bool // nccl.env judged the environment
	one     []Setting
	many    []Setting // values joined later; each value once
	manyV   [][]string
}

var (
	jsonUnknown = []byte(`"unknown"`)
	jsonError   = []byte(`"error"`)
	jsonSkip    = []byte(`"skip"`)
)

// settings reads the results member: only the rows of the checks above
// are looked into, and of them only the members their settings come from.
func settings(raw []byte) (s []Setting, ncclEnv bool, err error) {
	if raw == nil {
		return nil, false, nil
	}
	var r settingsReader
	var f [5][]byte
	var ev [2][]byte
	var evs []Setting // source, value
	err = elements(raw, func(_ int, res []byte) error {
		if err := membersInto(res, resultNames, f[:]); err != nil {
			return err
		}
		check := quotedIn(f[0], settingChecks)
		if check == "" {
			return nil
		}
		if f[1] == nil || bytes.Equal(f[1], jsonUnknown) || bytes.Equal(f[1], jsonError) {
			return nil // the check could not look: the setting is not known
		}
		skip := bytes.Equal(f[1], jsonSkip)
		var reason, msg string
		var err error
		switch check {
		case "iommu.mode", "pcie.acs":
			if skip {
				return nil
			}
			if reason, err = str(f[2], "reason"); err != nil {
				return err
			}
		case "limits.memlock", "gdr.kernel-module":
			if msg, err = str(f[3], "message"); err != nil {
				return err
			}
		}
		evs = evs[:0]
		if f[4] != nil && check != "limits.memlock" && check != "pcie.acs" && (check != "iommu.mode" || r.get(SettingCmdline) == "") {
			err := elements(f[4], func(_ int, e []byte) error {
				if err := membersInto(e, evidenceNames, ev[:]); err != nil {
					return err
				}
				er := row{ev[:], evidenceNames, nil}
				evs = append(evs, Setting{er.str(0), er.str(1)})
				return er.err
			})
			if err != nil {
				return err
			}
		}
		r.add(check, reason, msg, evs)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return r.list(), r.envSeen, nil
}

// quotedIn is the one of names that the JSON string id spells ("" none),
// compared without decoding it.
func quotedIn(id []byte, names []string) string {
	if len(id) < 2 || id[0] != '"' || id[len(id)-1] != '"' {
		return ""
	}
	for _, n := range names {
		if string(id[1:len(id)-1]) == n {
			return n
		}
	}
	return ""
}

func (r *settingsReader) get(name string) string {
	for _, s := range r.one {
		if s.Name == name {
			return s.Value
		}
	}
	return ""
}

func (r *settingsReader) set(name, v string) {
	for i := range r.one {
		if r.one[i].Name == name {
			r.one[i].Value = v
			return
		}
	}
	r.one = append(r.one, Setting{name, v})
}

func (r *settingsReader) addMany(name, v string) {
	for i := range r.many {
		if r.many[i].Name == name {
			if !slices.Contains(r.manyV[i], v) {
				r.manyV[i] = append(r.manyV[i], v)
			}
			return
		}
	}
	r.many = append(r.many, Setting{Name: name})
	r.manyV = append(r.manyV, []string{v})
}

// add reads one judged (not unknown) result of one of the checks: what
// its reason, message and evidence say, in the words the checks write
// them (internal/checks).
func (r *settingsReader) add(check, reason, msg string, evs []Setting) {
	switch check {
	case "nccl.env":
		r.envSeen = true
		for _, e := range evs {
			if e.Name != "environment" {
				continue
			}
			if k, v, ok := strings.Cut(e.Value, "="); ok && strings.HasPrefix(k, settingNCCLPref) {
				r.set(k, v)
			}
		}
	case "limits.memlock":
		// "RLIMIT_MEMLOCK is unlimited; ..." or "RLIMIT_MEMLOCK is 8192 KiB, ..."
		if rest, ok := strings.CutPrefix(msg, "RLIMIT_MEMLOCK is "); ok {
			if i := strings.IndexAny(rest, ";,:"); i > 0 {
				r.set(SettingMemlock, rest[:i])
			}
		}
	case "iommu.mode":
		r.addMany(SettingIOMMU, reason)
		for _, e := range evs {
			if strings.HasSuffix(e.Name, "/proc/cmdline") && !strings.HasPrefix(e.Value, "unreadable") {
				r.set(SettingCmdline, e.Value)
			}
		}
	case "gdr.kernel-module":
		for _, e := range evs {
			switch e.Value {
			case "nvidia_peermem/nv_peer_mem: yes":
				r.set(SettingPeermem, "loaded")
			case "nvidia_peermem/nv_peer_mem: no":
				r.set(SettingPeermem, "not loaded")
			}
		}
		// "...; dma-buf: yes (open kernel module ...)"
		if _, rest, ok := strings.Cut(msg, "dma-buf: "); ok {
			switch {
			case strings.HasPrefix(rest, "yes"):
				r.set(SettingDMABuf, "yes")
			case strings.HasPrefix(rest, "no") && !strings.Contains(strings.SplitN(rest, ")", 2)[0], "unknown"):
				// "no (NVIDIA kernel driver version unknown ...)" did not look
				r.set(SettingDMABuf, "no")
			}
		}
	case "pcie.acs":
		r.addMany(SettingACS, reason)
	case "pcie.mrr":
		for _, e := range evs {
			// "DevCtl MaxPayload 256 bytes, MaxReadReq 512 bytes (supported payload up to 512)"
			if v, ok := strings.CutPrefix(e.Value, "DevCtl "); ok {
				if i := strings.Index(v, " ("); i > 0 {
					v = v[:i]
				}
				r.addMany(SettingMRR, v)
			}
		}
	}
}

// list is the node's settings, sorted by name.
func (r *settingsReader) list() []Setting {
	if len(r.one)+len(r.many) == 0 {
		return nil
	}
	out := make([]Setting, 0, len(r.one)+len(r.many))
	out = append(out, r.one...)
	for i, s := range r.many {
		slices.Sort(r.manyV[i])
		out = append(out, Setting{s.Name, strings.Join(r.manyV[i], ", ")})
	}
	slices.SortFunc(out, func(a, b Setting) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Setting is the value of the named setting on n, "" when its report
// does not say; an NCCL variable the node's nccl.env result does not name
// is "not reported" (unset, or set to a value nccl.env does not report).
func (n *Node) Setting(name string) string {
	i, ok := slices.BinarySearchFunc(n.Settings, name, func(s Setting, name string) int { return strings.Compare(s.Name, name) })
	if ok {
		return n.Settings[i].Value
	}
	if n.NCCLEnv && strings.HasPrefix(name, settingNCCLPref) {
		return notReported
	}
	return ""
}
