package gpu

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// NVLinkCounters are one NVLink's error and data counters at a reading.
// A counter the driver would not give is in Missing with the reason, never
// a 0 in Values.
type NVLinkCounters struct {
	Link    int               `json:"link"`
	Values  map[string]uint64 `json:"values,omitempty"`
	Missing map[string]string `json:"missing,omitempty"`
}

// Set records a counter's value.
func (c *NVLinkCounters) Set(name string, v uint64) {
	if c.Values == nil {
		c.Values = map[string]uint64{}
	}
	c.Values[name] = v
	delete(c.Missing, name)
}

// Miss records why a counter has no value (and drops a value it had).
func (c *NVLinkCounters) Miss(name, why string) {
	if c.Missing == nil {
		c.Missing = map[string]string{}
	}
	c.Missing[name] = why
	delete(c.Values, name)
}

// The NVLink counters, by the names NVLinkCounters keeps them under.
// The first four are the data-link layer's error counters of NVLink 1 to 4
// (nvmlDeviceGetNvLinkErrorCounter: NVML_NVLINK_ERROR_DL_*); the
// throughput counters count KiB of payload (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_*);
// the rest are NVLink 5's (Blackwell: NVML_FI_DEV_NVLINK_COUNT_*), where the
// data-link error counters are not supported.
const (
	NVLinkCRCFlit          = "crc_flit_errors"             // flow-control digit CRC errors (DL_CRC_FLIT)
	NVLinkCRCData          = "crc_data_errors"             // data CRC errors (DL_CRC_DATA)
	NVLinkReplay           = "replay_errors"               // data-link replays (DL_REPLAY)
	NVLinkRecovery         = "recovery_errors"             // link recoveries (DL_RECOVERY)
	NVLinkTxKiB            = "tx_data_kib"                 // payload sent, KiB
	NVLinkRxKiB            = "rx_data_kib"                 // payload received, KiB
	NVLinkRecoveryEvents   = "recovery_events"             // NVLink 5: link recovery events
	NVLinkRecoveryFailed   = "recovery_failed_events"      // NVLink 5: failed link recoveries
	NVLinkEffectiveErrors  = "effective_errors"            // NVLink 5: errors left after FEC
	NVLinkIntegrityErrors  = "local_link_integrity_errors" // NVLink 5
	NVLinkRcvErrors        = "rcv_errors"                  // NVLink 5: received packets with errors
	NVLinkSymbolErrors     = "symbol_errors"               // NVLink 5: symbol errors (before FEC)
	smiNVLinkErrorsCommand = "nvidia-smi nvlink -e"
)

// NVLinkCounterNames are the counters a live reading looks for on every
// active link, in order.
var NVLinkCounterNames = []string{
	NVLinkCRCFlit, NVLinkCRCData, NVLinkReplay, NVLinkRecovery, NVLinkTxKiB, NVLinkRxKiB,
	NVLinkRecoveryEvents, NVLinkRecoveryFailed, NVLinkEffectiveErrors, NVLinkIntegrityErrors, NVLinkRcvErrors, NVLinkSymbolErrors,
}

// smiNVLinkNames maps the counters nvidia-smi nvlink -e prints to their
// names here. Its "CRC Errors" is the data-link CRC counter of flow-control
// digits (NVML_NVLINK_ERROR_DL_CRC_FLIT), the one CRC counter per link it
// shows; the per-lane ones are -ec's.
var smiNVLinkNames = map[string]string{
	"Replay Errors":   NVLinkReplay,
	"Recovery Errors": NVLinkRecovery,
	"CRC Errors":      NVLinkCRCFlit,
}

// SMINVLinkErrors is one GPU's part of `nvidia-smi nvlink -e`.
type SMINVLinkErrors struct {
	Index int    // nvidia-smi's GPU index
	UUID  string // "" when the header has none
	// Note is what nvidia-smi said instead of counters ("NVML: Unable to
	// retrieve NVLink information as all links are inActive").
	Note  string
	Links []NVLinkCounters
}

// ParseSMINVLinkErrors reads `nvidia-smi nvlink -e`: per GPU a header
// ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)") and lines
// "Link N: NAME: VALUE". The counters it does not print (the data CRC
// counter, throughput) are missing with that reason, never 0; a name it
// prints that gdrcheck does not know is kept under its snake_case form.
// Another line inside a GPU's block is that GPU's Note; a line before the
// first header, a bad number or a counter printed twice is an error naming
// the line.
func ParseSMINVLinkErrors(name string, b []byte) ([]SMINVLinkErrors, error) {
	var out []SMINVLinkErrors
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), textio.MaxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "GPU "); ok {
			idx, head, ok := strings.Cut(rest, ":")
			i, err := strconv.Atoi(idx)
			if !ok || err != nil || i < 0 || i >= MaxGPUs {
				return nil, textio.Errorf(name, n, "GPU header %q: want \"GPU N: NAME (UUID: ...)\"", line)
			}
			g := SMINVLinkErrors{Index: i}
			if _, u, ok := strings.Cut(head, "(UUID: "); ok {
				g.UUID = strings.TrimSuffix(strings.TrimSpace(u), ")")
			}
			out = append(out, g)
			continue
		}
		if len(out) == 0 {
			return nil, textio.Errorf(name, n, "%q before the first \"GPU N:\" header: not %s output", line, smiNVLinkErrorsCommand)
		}
		g := &out[len(out)-1]
		rest, ok := strings.CutPrefix(line, "Link ")
		if !ok {
			g.Note = strings.TrimSpace(g.Note + " " + line)
			continue
		}
		num, kv, ok1 := strings.Cut(rest, ":")
		label, val, ok2 := strings.Cut(kv, ":")
		link, err := strconv.Atoi(num)
		if !ok1 || err != nil || link < 0 || link >= maxNVLinks {
			return nil, textio.Errorf(name, n, "%q: want \"Link N: NAME: VALUE\"", line)
		}
		if !ok2 {
			// "Link 3: <inactive>", as nvlink -s prints a link that is
			// down: no counter of it was printed.
			c := linkCounters(g, link)
			for _, k := range []string{NVLinkCRCFlit, NVLinkReplay, NVLinkRecovery} {
				if _, read := c.Values[k]; !read {
					c.Miss(k, smiNVLinkErrorsCommand+" printed "+strconv.Quote(strings.TrimSpace(kv)))
				}
			}
			continue
		}
		label, val = strings.TrimSpace(label), strings.TrimSpace(val)
		key, known := smiNVLinkNames[label]
		if !known {
			key = snake(label)
		}
		c := linkCounters(g, link)
		_, dup := c.Values[key]
		if why, ok := c.Missing[key]; ok && strings.HasPrefix(why, smiNVLinkErrorsCommand+" printed N/A") {
			dup = true
		}
		if dup {
			return nil, textio.Errorf(name, n, "link %d %s printed twice", link, label)
		}
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			// nvidia-smi prints N/A for a counter the driver refused.
			if val == "N/A" || strings.HasPrefix(val, "N/A") {
				c.Miss(key, smiNVLinkErrorsCommand+" printed "+val)
				continue
			}
			return nil, textio.Errorf(name, n, "link %d %s: %q is not a count", link, label, val)
		}
		c.Set(key, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no \"GPU N:\" header: not %s output", name, smiNVLinkErrorsCommand)
	}
	for i := range out {
		for j := range out[i].Links {
			c := &out[i].Links[j]
			for _, k := range []string{NVLinkCRCFlit, NVLinkCRCData, NVLinkReplay, NVLinkRecovery, NVLinkTxKiB, NVLinkRxKiB} {
				if _, ok := c.Values[k]; !ok && c.Missing[k] == "" {
					c.Miss(k, "not printed by "+smiNVLinkErrorsCommand)
				}
			}
		}
	}
	return out, nil
}

func linkCounters(g *SMINVLinkErrors, link int) *NVLinkCounters {
	for i := range g.Links {
		if g.Links[i].Link == link {
			return &g.Links[i]
		}
	}
	g.Links = append(g.Links, NVLinkCounters{Link: link})
	return &g.Links[len(g.Links)-1]
}

// snake is "Malformed Packet Errors" as "malformed_packet_errors".
func snake(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// MergeSMINVLinkErrors puts what nvidia-smi nvlink -e printed into the
// facts' GPUs, matched by UUID (else by index). A GPU it printed only a
// note for gets no counters; the note is returned among the problems, as
// is a GPU of the output the facts do not have.
func MergeSMINVLinkErrors(f *Facts, parsed []SMINVLinkErrors) []string {
	var problems []string
	for _, p := range parsed {
		var g *GPU
		for i := range f.GPUs {
			if (p.UUID != "" && f.GPUs[i].UUID == p.UUID) || (p.UUID == "" && f.GPUs[i].Index == p.Index) {
				g = &f.GPUs[i]
			}
		}
		switch {
		case g == nil:
			problems = append(problems, fmt.Sprintf("%s: GPU %d (%s) is not among the GPUs nvidia-smi -q -x listed", smiNVLinkErrorsCommand, p.Index, p.UUID))
		case len(p.Links) == 0 && p.Note != "":
			problems = append(problems, fmt.Sprintf("%s: GPU %d: %s", smiNVLinkErrorsCommand, p.Index, p.Note))
		default:
			g.NVLinkCounters = p.Links
		}
	}
	return problems
}
