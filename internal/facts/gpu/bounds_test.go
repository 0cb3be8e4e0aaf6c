package gpu

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/testutil/memtest"
)

// repeat repeats item n times, joined by sep.
func repeat(item, sep string, n int) string {
	return strings.TrimSuffix(strings.Repeat(item+sep, n), sep)
}

// fill repeats item, joined by sep, to about size bytes.
func fill(item, sep string, size int) string {
	return repeat(item, sep, size/(len(item)+len(sep)))
}

// A facts file the door lets through (4 MiB) decodes into at most a few
// times its size, and one larger than any host's in some dimension is
// refused before it is decoded. Review rows 51-52 (4000 GPUs, wrong
// types) and the shapes that cost the most per byte.
func TestDecodeFactsBounded(t *testing.T) {
	const size = machine.DefaultMaxRead - 64
	long := strings.Repeat("x", maxFactString+1)
	for _, c := range []struct {
		name, doc string
		ok        bool
	}{
		{"a million empty GPUs", `{"gpus":[` + fill("{}", ",", size) + `]}`, false},
		{"MaxGPUs GPUs", `{"gpus":[` + repeat("{}", ",", MaxGPUs) + `]}`, true},
		{"NVLinks of one GPU", `{"gpus":[{"nvlinks":[` + fill("{}", ",", size) + `]}]}`, false},
		{"clock events", `{"gpus":[{"clock_events":[` + fill(`""`, ",", size) + `]}]}`, false},
		{"P2P pairs", `{"p2p":[` + fill(`{"a":1}`, ",", size) + `]}`, false},
		{"errors", `{"errors":[` + fill(`""`, ",", size) + `]}`, false},
		{"an unread array", `{"other":[` + fill("0", ",", size) + `]}`, false},
		{"a long name", `{"gpus":[{"name":"` + long + `"}]}`, false},
		{"deep nesting", `{"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`, false},
		{"4000 GPUs (review row 51)", `{"gpus":[` + repeat(`{"index":1000000000000,"bus_id":"../../../../etc"}`, ",", 4000) + `]}`, false},
		{"wrong type (review row 52)", `{"gpus":{}}`, false},
	} {
		var f *Facts
		var err error
		n := memtest.Allocated(func() { f, err = DecodeFacts("nvml.json", []byte(c.doc)) })
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.ok && err == nil && len(f.GPUs) != MaxGPUs {
			t.Errorf("%s: %d GPUs", c.name, len(f.GPUs))
		}
		// The shape check holds one token at a time; decoding, what it
		// decodes. Either is a few times the input.
		if limit := 8*uint64(len(c.doc)) + 1<<20; n > limit {
			t.Errorf("%s (%d bytes): %d bytes allocated, want at most %d", c.name, len(c.doc), n, limit)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("%s: message of %d bytes", c.name, len(err.Error()))
		}
	}
}

// nvidia-smi -q -x gets the same bounds: a million <gpu/> elements stop
// at MaxGPUs, a GPU's clock event reasons at maxClockEvents, and nesting
// at the decoder's own depth limit.
func TestParseSMIQueryBounded(t *testing.T) {
	const size = machine.DefaultMaxRead - 64
	log := func(body string) string {
		return "<nvidia_smi_log><driver_version>580.1</driver_version>" + body + "</nvidia_smi_log>"
	}
	for _, c := range []struct {
		name, doc string
		ok        bool
	}{
		{"a million empty GPUs", log(fill("<gpu/>", "", size)), false},
		{"MaxGPUs GPUs", log(repeat("<gpu/>", "", MaxGPUs)), true},
		{"clock event reasons", log("<gpu><clocks_event_reasons>" + fill("<a/>", "", size) + "</clocks_event_reasons></gpu>"), false},
		{"deep nesting", log("<gpu>" + strings.Repeat("<a>", size/8) + strings.Repeat("</a>", size/8) + "</gpu>"), false},
		{"deep nesting outside a GPU", log(strings.Repeat("<a>", size/8) + strings.Repeat("</a>", size/8)), false},
		{"deep nesting behind quoted />", log(strings.Repeat(`<a x="/>" y='>'>`, 1000)), false},
		{"comments, CDATA and self-closing tags", log("<!-- <a><a> -->" + repeat(`<gpu><name x="/>"><![CDATA[<b><b>]]></name><pci/></gpu>`, "", MaxGPUs)), true},
	} {
		var f *Facts
		var err error
		n := memtest.Allocated(func() { f, err = ParseSMIQuery("q.xml", []byte(c.doc)) })
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.ok && err == nil && len(f.GPUs) != MaxGPUs {
			t.Errorf("%s: %d GPUs", c.name, len(f.GPUs))
		}
		// The decoder's tokens, and the GPUs themselves.
		if limit := 16*uint64(len(c.doc)) + 2*MaxGPUs*uint64(unsafe.Sizeof(smiGPU{})) + 1<<20; n > limit {
			t.Errorf("%s (%d bytes): %d bytes allocated, want at most %d", c.name, len(c.doc), n, limit)
		}
	}
}

func ExampleDecodeFacts() {
	_, err := DecodeFacts("nvml.json", []byte(`{"gpus":[`+repeat("{}", ",", MaxGPUs+1)+`]}`))
	fmt.Println(err)
	// Output: nvml.json: larger than any host's GPU facts: gpus has more than 256 elements
}
