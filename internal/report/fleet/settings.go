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

// The check IDs whose results carry settings, as they appear quoted in
// the JSON (compared without decoding).
var (
	idNCCLEnv = []byte(`"nccl.env"`)
	idMemlock = []byte(`"limits.memlock"`)
	idIOMMU   = []byte(`"iommu.mode"`)
	idKernMod = []byte(`"gdr.kernel-module"`)
	idACS     = []byte(`"pcie.acs"`)
	idMRR     = []byte(`"pcie.mrr"`)

	resultNames   = []string{"id", "status", "reason", "message", "evidence"}
	evidenceNames = []string{"source", "value"}
)

// settingsReader collects a node's settings from its results.
type settingsReader struct {
	env     map[string]string // NCCL_* from nccl.env's evidence
	envSeen bool              // nccl.env judged the environment
	one     map[string]string // memlock, cmdline, peermem, dma-buf
	many    map[string][]string
}

// settings reads the results member: only the rows of the checks above
// are looked into.
func settings(raw []byte) (s []Setting, ncclEnv bool, err error) {
	if raw == nil {
		return nil, false, nil
	}
	var r settingsReader
	var f [5][]byte
	var ev [2][]byte
	err = elements(raw, func(_ int, row []byte) error {
		if err := membersInto(row, resultNames, f[:]); err != nil {
			return err
		}
		id := f[0]
		if !bytes.Equal(id, idNCCLEnv) && !bytes.Equal(id, idMemlock) && !bytes.Equal(id, idIOMMU) &&
			!bytes.Equal(id, idKernMod) && !bytes.Equal(id, idACS) && !bytes.Equal(id, idMRR) {
			return nil
		}
		status, err := str(f[1], "status")
		if err != nil {
			return err
		}
		if status == "unknown" || status == "error" || status == "" {
			return nil // the check could not look: the setting is not known
		}
		reason, err := str(f[2], "reason")
		if err != nil {
			return err
		}
		msg, err := str(f[3], "message")
		if err != nil {
			return err
		}
		var evs []Setting // source, value
		if f[4] != nil {
			err := elements(f[4], func(_ int, e []byte) error {
				if err := membersInto(e, evidenceNames, ev[:]); err != nil {
					return err
				}
				src, err := str(ev[0], "source")
				if err != nil {
					return err
				}
				v, err := str(ev[1], "value")
				evs = append(evs, Setting{src, v})
				return err
			})
			if err != nil {
				return err
			}
		}
		r.add(string(id[1:len(id)-1]), status, reason, msg, evs)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return r.list(), r.envSeen, nil
}

func (r *settingsReader) set(name, v string) {
	if r.one == nil {
		r.one = map[string]string{}
	}
	r.one[name] = v
}

func (r *settingsReader) addMany(name, v string) {
	if r.many == nil {
		r.many = map[string][]string{}
	}
	if !slices.Contains(r.many[name], v) {
		r.many[name] = append(r.many[name], v)
	}
}

// add reads one result of one of the checks: what its evidence and
// message say, in the words the checks write them (internal/checks).
func (r *settingsReader) add(id, status, reason, msg string, evs []Setting) {
	switch id {
	case "nccl.env":
		r.envSeen = true
		for _, e := range evs {
			if e.Name != "environment" {
				continue
			}
			if k, v, ok := strings.Cut(e.Value, "="); ok && strings.HasPrefix(k, settingNCCLPref) {
				if r.env == nil {
					r.env = map[string]string{}
				}
				r.env[k] = v
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
		if status == "skip" {
			return
		}
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
		if status != "skip" {
			r.addMany(SettingACS, reason)
		}
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
	var out []Setting
	for k, v := range r.env {
		out = append(out, Setting{k, v})
	}
	for k, v := range r.one {
		out = append(out, Setting{k, v})
	}
	for k, vs := range r.many {
		slices.Sort(vs)
		out = append(out, Setting{k, strings.Join(vs, ", ")})
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
