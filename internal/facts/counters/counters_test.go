package counters

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

func TestParseAERFixtures(t *testing.T) {
	cases := []struct {
		file, group string
		fields      int
		want        map[string]uint64
	}{
		{"aer_dev_correctable", GroupAERCor, 9, map[string]uint64{"RxErr": 0, "BadTLP": 3, "Timeout": 2, "TOTAL_ERR_COR": 6}},
		{"aer_dev_nonfatal", GroupAERNonfat, 19, map[string]uint64{"CmpltTO": 1, "PoisonTLPBlocked": 0, "TOTAL_ERR_NONFATAL": 1}},
		{"aer_dev_fatal", GroupAERFatal, 19, map[string]uint64{"TOTAL_ERR_FATAL": 0, "Undefined": 0}},
		{"aer_dev_correctable.v4.19", GroupAERCor, 9, map[string]uint64{"Receiver Error": 2, "Replay Timer Timeout": 0, "TOTAL_ERR_COR": 2}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseAER(c.group, c.file, string(b))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.fields {
				t.Errorf("%d fields, want %d: %v", len(got), c.fields, got)
			}
			for k, v := range c.want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %d (present %v), want %d", k, g, ok, v)
				}
			}
		})
	}
}

func TestParseAERErrors(t *testing.T) {
	cases := []struct {
		name, group, in, want string
	}{
		{"no total", GroupAERCor, "RxErr 0\nBadTLP 0\n", "f:2: no TOTAL_ERR_COR line"},
		{"empty", GroupAERCor, "", "f:1: no TOTAL_ERR_COR line"},
		{"wrong total", GroupAERFatal, "DLP 0\nTOTAL_ERR_COR 0\n", "f:2: TOTAL_ERR_COR in aer_dev_fatal: want TOTAL_ERR_FATAL"},
		{"bad number", GroupAERCor, "RxErr 0\nBadTLP x3\nTOTAL_ERR_COR 0\n", `f:2: "BadTLP": want a decimal count, got "x3"`},
		{"negative", GroupAERCor, "RxErr -1\nTOTAL_ERR_COR 0\n", `f:1: "RxErr": want a decimal count`},
		{"no value", GroupAERCor, "RxErr\nTOTAL_ERR_COR 0\n", `f:1: want NAME VALUE, got "RxErr"`},
		{"no name", GroupAERCor, " 5\nTOTAL_ERR_COR 0\n", `f:1: want NAME VALUE`},
		{"twice", GroupAERCor, "RxErr 0\nRxErr 1\nTOTAL_ERR_COR 1\n", `f:2: "RxErr" given twice`},
		{"after total", GroupAERCor, "TOTAL_ERR_COR 0\nRxErr 1\n", `f:2: "RxErr" after the TOTAL_ERR_COR line`},
		{"blank inside", GroupAERCor, "RxErr 0\n\nTOTAL_ERR_COR 0\n", "f:2: empty line"},
		{"not aer", "counters", "TOTAL_ERR_COR 0\n", `f: "counters" is not an AER statistics file`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseAER(c.group, "f", c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestParseValue(t *testing.T) {
	cases := []struct {
		in      string
		want    uint64
		err     string
		noPMA   bool
		wantErr bool
	}{
		{in: "0\n", want: 0},
		{in: "18446744073709551615\n", want: 1<<64 - 1},
		{in: " 42 \n", want: 42},
		{in: "N/A (no PMA)\n", noPMA: true, wantErr: true},
		{in: "-1\n", err: `f:1: want a decimal counter, got "-1"`, wantErr: true},
		{in: "\n", err: `f:1: want a decimal counter, got ""`, wantErr: true},
		{in: "1\n2\n", err: "f:2: want one number", wantErr: true},
		{in: "0x10\n", err: "want a decimal counter", wantErr: true},
	}
	for _, c := range cases {
		got, err := ParseValue("f", c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("%q: err = %v", c.in, err)
			continue
		}
		if c.noPMA && !errors.Is(err, ErrNoPMA) {
			t.Errorf("%q: err = %v, want ErrNoPMA", c.in, err)
		}
		if c.err != "" && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: err = %v, want %q", c.in, err, c.err)
		}
		if err == nil && got != c.want {
			t.Errorf("%q = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestSaturation(t *testing.T) {
	cases := map[string]uint64{
		"counters/symbol_error":                    65535,
		"counters/link_downed":                     255,
		"counters/link_error_recovery":             255,
		"counters/excessive_buffer_overrun_errors": 15,
		"counters/local_link_integrity_errors":     15,
		"counters/port_rcv_data":                   1<<32 - 1,
		"counters/unknown_thing":                   0,
		"hw_counters/out_of_sequence":              0,
		"aer_dev_correctable/TOTAL_ERR_COR":        0,
		"symbol_error":                             0,
	}
	for name, want := range cases {
		if got := Saturation(name); got != want {
			t.Errorf("Saturation(%s) = %d, want %d", name, got, want)
		}
	}
	for _, c := range PMACounters {
		if Saturation(GroupPMA+"/"+c) == 0 {
			t.Errorf("%s has no width", c)
		}
	}
}

func TestReadingGet(t *testing.T) {
	var r Reading
	r.Set("counters/symbol_error", 3)
	r.Miss("counters/link_downed", "permission denied")
	r.Miss(GroupAERFatal, NotExposed)
	cases := []struct {
		name string
		v    uint64
		why  string
		ok   bool
	}{
		{"counters/symbol_error", 3, "", true},
		{"counters/link_downed", 0, "permission denied", false},
		{"aer_dev_fatal/TOTAL_ERR_FATAL", 0, NotExposed, false},
		{"counters/port_rcv_errors", 0, "not read", false},
	}
	for _, c := range cases {
		v, why, ok := r.Get(c.name)
		if v != c.v || why != c.why || ok != c.ok {
			t.Errorf("Get(%s) = %d %q %v, want %d %q %v", c.name, v, why, ok, c.v, c.why, c.ok)
		}
	}
	var nilr *Reading
	if _, why, ok := nilr.Get("x"); ok || why != "not read" {
		t.Errorf("nil reading: %q %v", why, ok)
	}
}

// FuzzParseAER: any input, no panic; an accepted file has its TOTAL_ line
// and only decimal counts; a refused one names the file and a line.
func FuzzParseAER(f *testing.F) {
	for _, name := range []string{"aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal", "aer_dev_correctable.v4.19"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), 0)
	}
	f.Add("RxErr 1\r\nTOTAL_ERR_COR 1\r\n", 0)
	f.Add("DLP 18446744073709551616\nTOTAL_ERR_FATAL 0\n", 2)
	f.Fuzz(func(t *testing.T, in string, which int) {
		file := AERFiles[((which%3)+3)%3]
		got, err := ParseAER(file, "f", in)
		if err != nil {
			var pe *textio.ParseError
			if !errors.As(err, &pe) || pe.Name != "f" || pe.Line < 1 {
				t.Fatalf("error %v does not name the file and a line", err)
			}
			return
		}
		if _, ok := got[AERTotal(file)]; !ok {
			t.Fatalf("accepted without %s: %v", AERTotal(file), got)
		}
	})
}

// FuzzParseValue: any input, no panic; an accepted value prints back as
// the trimmed input.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"0\n", "65535\n", "N/A (no PMA)\n", "18446744073709551615\n", " 7 ", "1\n2\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := ParseValue("f", in)
		if err != nil {
			return
		}
		if got := strconv.FormatUint(v, 10); got != strings.TrimLeft(strings.TrimSpace(in), "+0") && !(v == 0 && strings.Trim(strings.TrimSpace(in), "+0") == "") {
			t.Fatalf("%q read as %d", in, v)
		}
	})
}
