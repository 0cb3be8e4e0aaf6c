package gpu

import (
	"os"
	"strings"
	"testing"
)

// TestParseSMINVLinkErrors reads real nvidia-smi nvlink -e outputs
// (testdata/README.md) and every malformed shape.
func TestParseSMINVLinkErrors(t *testing.T) {
	read := func(f string) string {
		b, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name, in string
		gpus     int
		links    int    // of the first GPU
		uuid     string // of the first GPU
		note     string // of the first GPU
		err      string
	}{
		{name: "a100x8", in: read("a100x8-nvidia-smi-nvlink-e.txt"), gpus: 8, links: 12, uuid: "GPU-fde0a018-ad1a-bbec-ccf6-50a9f64bd178"},
		{name: "gb300 header without UUID", in: read("gb300-nvidia-smi-nvlink-e.txt"), gpus: 1, links: 1},
		{name: "b200 all links inactive", in: read("b200-inactive-nvidia-smi-nvlink-e.txt"), gpus: 1, uuid: "GPU-xxx", note: "NVML: Unable to retrieve NVLink information as all links are inActive"},
		{name: "N/A is missing, not 0", in: "GPU 0: X (UUID: GPU-a)\n\t Link 0: Replay Errors: N/A\n\t Link 0: CRC Errors: 3\n", gpus: 1, links: 1, uuid: "GPU-a"},
		{name: "unknown counter kept", in: "GPU 0: X (UUID: GPU-a)\n\t Link 4: Malformed Packet Errors: 2\n", gpus: 1, links: 1, uuid: "GPU-a"},
		{name: "a link with a word for its counters", in: "GPU 0: X (UUID: GPU-a)\n\t Link 0: CRC Errors: 0\n\t Link 3: <inactive>\n", gpus: 1, links: 2, uuid: "GPU-a"},
		{name: "empty", in: "", err: "no \"GPU N:\" header"},
		{name: "line before a header", in: "Link 0: CRC Errors: 0\n", err: ":1: \"Link 0: CRC Errors: 0\" before the first"},
		{name: "bad header", in: "GPU x: X\n", err: ":1: GPU header"},
		{name: "bad link line", in: "GPU 0: X\n\t Link zero: CRC Errors: 0\n", err: ":2: \"Link zero: CRC Errors: 0\": want"},
		{name: "bad count", in: "GPU 0: X\n\t Link 0: CRC Errors: -1\n", err: ":2: link 0 CRC Errors: \"-1\" is not a count"},
		{name: "twice", in: "GPU 0: X\n\t Link 0: CRC Errors: 1\n\t Link 0: CRC Errors: 2\n", err: ":3: link 0 CRC Errors printed twice"},
		{name: "link out of range", in: "GPU 0: X\n\t Link 99: CRC Errors: 1\n", err: ":2:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSMINVLinkErrors("nvlink-e.txt", []byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "nvlink-e.txt") {
					t.Fatalf("err = %v, want %q naming the file", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.gpus || len(got[0].Links) != tc.links || got[0].UUID != tc.uuid || got[0].Note != tc.note {
				t.Fatalf("got %d GPUs, first %+v", len(got), got[0])
			}
		})
	}
	got, _ := ParseSMINVLinkErrors("x", []byte(read("a100x8-nvidia-smi-nvlink-e.txt")))
	l := got[7].Links[11]
	if got[7].Index != 7 || l.Link != 11 || l.Values[NVLinkReplay] != 0 || len(l.Values) != 3 {
		t.Errorf("GPU 7 link 11 = %+v", l)
	}
	for _, k := range []string{NVLinkReplay, NVLinkRecovery, NVLinkCRCFlit} {
		if _, ok := l.Values[k]; !ok {
			t.Errorf("%s not read", k)
		}
	}
	// What nvidia-smi does not print is missing with the reason, never 0.
	for _, k := range []string{NVLinkCRCData, NVLinkRxKiB, NVLinkTxKiB} {
		if _, ok := l.Values[k]; ok || !strings.Contains(l.Missing[k], "not printed by nvidia-smi nvlink -e") {
			t.Errorf("%s: value %v, missing %q", k, l.Values[k], l.Missing[k])
		}
	}
	na, _ := ParseSMINVLinkErrors("x", []byte("GPU 0: X\n\t Link 0: Replay Errors: N/A\n"))
	if _, ok := na[0].Links[0].Values[NVLinkReplay]; ok || na[0].Links[0].Missing[NVLinkReplay] == "" {
		t.Errorf("N/A: %+v", na[0].Links[0])
	}
	word, _ := ParseSMINVLinkErrors("x", []byte("GPU 0: X\n\t Link 3: <inactive>\n"))
	if l := word[0].Links[0]; l.Link != 3 || len(l.Values) != 0 || !strings.Contains(l.Missing[NVLinkCRCFlit], `printed "<inactive>"`) {
		t.Errorf("a link printed as <inactive>: %+v", l)
	}
	unk, _ := ParseSMINVLinkErrors("x", []byte("GPU 0: X\n\t Link 4: Malformed Packet Errors: 2\n"))
	if unk[0].Links[0].Link != 4 || unk[0].Links[0].Values["malformed_packet_errors"] != 2 {
		t.Errorf("unknown counter: %+v", unk[0].Links[0])
	}
}

func TestMergeSMINVLinkErrors(t *testing.T) {
	f := &Facts{GPUs: []GPU{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}}}
	parsed := []SMINVLinkErrors{
		{Index: 5, UUID: "GPU-b", Links: []NVLinkCounters{{Link: 2, Values: map[string]uint64{NVLinkCRCFlit: 4}}}},
		{Index: 0, UUID: "GPU-a", Note: "NVML: Unable to retrieve NVLink information as all links are inActive"},
		{Index: 9, UUID: "GPU-z", Links: []NVLinkCounters{{Link: 0}}},
	}
	problems := MergeSMINVLinkErrors(f, parsed)
	if len(f.GPUs[1].NVLinkCounters) != 1 || f.GPUs[1].NVLinkCounters[0].Values[NVLinkCRCFlit] != 4 {
		t.Errorf("GPU-b (matched by UUID, not index) = %+v", f.GPUs[1].NVLinkCounters)
	}
	if f.GPUs[0].NVLinkCounters != nil {
		t.Errorf("GPU-a got counters from a note: %+v", f.GPUs[0].NVLinkCounters)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], "inActive") || !strings.Contains(problems[1], "GPU-z") {
		t.Errorf("problems = %q", problems)
	}
}

// FuzzParseSMINVLinkErrors: any input parses or errors without a panic,
// and no counter is both read and missing.
func FuzzParseSMINVLinkErrors(f *testing.F) {
	for _, name := range []string{"a100x8-nvidia-smi-nvlink-e.txt", "gb300-nvidia-smi-nvlink-e.txt", "b200-inactive-nvidia-smi-nvlink-e.txt"} {
		if b, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("GPU 0: X\n\t Link 3: <inactive>\n\t Link 3: CRC Errors: N/A\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseSMINVLinkErrors("fuzz.txt", b)
		if err != nil {
			return
		}
		for _, g := range got {
			for _, l := range g.Links {
				for k := range l.Values {
					if why, ok := l.Missing[k]; ok {
						t.Fatalf("GPU %d link %d %s: read and missing (%s)", g.Index, l.Link, k, why)
					}
				}
			}
		}
	})
}
