package perftest

import (
	"io"
	"math"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// perftest writes --out_json with dprintf, one "key": value per line, in a
// "test_info" and a "results" object (src/perftest_parameters.c). Some
// variants are not valid JSON (the QoS line writes sl: unquoted), so the
// file is read line by line rather than with a JSON decoder.
var (
	reJKV    = textio.MustCompile(`^\s*"?([^":{}]+?)"?\s*:\s*(.*?)\s*,?\s*$`)
	reJOpen  = textio.MustCompile(`^\s*\{\s*$`)
	reJClose = textio.MustCompile(`^\s*\}\s*,?\s*$`)
)

func analyzeJSON(name string, r io.Reader) (*Report, error) {
	rep := &Report{Format: "json", Params: map[string]string{}}
	lr := textio.NewLineReader(name, r)
	var section string
	depth := 0
	res := map[string]string{}
	resLine := 0
	sawInfo := false
	for n, line := range lr.All() {
		t := strings.TrimSpace(line)
		switch {
		case t == "":
		case reJOpen.MatchString(t):
			depth++
		case reJClose.MatchString(t):
			if depth == 0 {
				return nil, textio.Errorf(name, n, "unbalanced '}'")
			}
			depth--
			if section == "results" && depth == 1 {
				if err := jsonRow(rep, res, resLine); err != nil {
					return nil, textio.Errorf(name, resLine, "%s", err)
				}
				res = map[string]string{}
			}
			if depth <= 1 {
				section = ""
			}
		case reJKV.MatchString(t):
			m := reJKV.FindStringSubmatch(t)
			k, v := strings.TrimSpace(m[1]), strings.Trim(strings.TrimSpace(m[2]), `"`)
			if strings.HasSuffix(strings.TrimSpace(m[2]), "{") {
				depth++
				section = k
				if k == "test_info" {
					sawInfo = true
				}
				if k == "results" {
					resLine = n
				}
				continue
			}
			switch section {
			case "test_info":
				jsonInfo(rep, k, v)
			case "results":
				if len(res) < 64 {
					res[textio.Clip(k, 64)] = textio.Clip(v, 64)
				}
			}
		default:
			return nil, textio.Errorf(name, n, "not a perftest --out_json line: %q", textio.Clip(t, 120))
		}
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	if depth != 0 {
		return nil, textio.Errorf(name, max(lr.Line(), 1), "JSON ends inside an object (truncated file?)")
	}
	if !sawInfo && len(rep.Rows) == 0 && len(rep.LatRows) == 0 {
		return nil, textio.Errorf(name, max(lr.Line(), 1), "JSON has no perftest test_info or results")
	}
	if rep.Sides == 0 {
		rep.Sides = 1
	}
	if len(rep.Params) == 0 {
		rep.Params = nil
	}
	return rep, nil
}

func jsonInfo(rep *Report, k, v string) {
	param(rep, k, v)
	switch k {
	case "test":
		v = textio.Clip(v, 128)
		rep.Test = strings.ReplaceAll(v, "_", " ")
		if strings.Contains(v, "Latency") {
			rep.Type = "lat"
		} else if strings.Contains(v, "BW") {
			rep.Type = "bw"
		}
	case "cuda_device":
		rep.Memory.Kind = "cuda"
	case "Use_ROCm_memory":
		if v == "ON" {
			rep.Memory.Kind = "rocm"
		}
	}
}

func jsonRow(rep *Report, res map[string]string, line int) error {
	num := func(k string) (float64, bool) {
		v, ok := res[k]
		if !ok {
			return 0, false
		}
		return textio.ParseFloat(v)
	}
	size, okSize := num("MsgSize")
	iters, _ := num("n_iterations")
	if size < 0 || size > math.MaxInt64/2 || iters < 0 || iters > math.MaxInt64/2 {
		return errString("message size or iteration count out of range")
	}
	if avg, ok := num("BW_average"); ok {
		if rep.Type == "" {
			rep.Type = "bw"
		}
		peak, _ := num("BW_peak")
		rate, _ := num("MsgRate")
		if len(rep.Rows) < maxRows {
			rep.Rows = append(rep.Rows, Row{Bytes: int64(size), Iterations: int64(iters), BWPeak: peak, BWAverage: avg, MsgRate: rate, Line: line})
		}
		return nil
	}
	if avg, ok := num("bw_avg"); ok { // --output=bandwidth
		if len(rep.Rows) < maxRows {
			rep.Rows = append(rep.Rows, Row{Bytes: int64(size), BWAverage: avg, Line: line})
		}
		return nil
	}
	lr := LatRow{Bytes: int64(size), Iterations: int64(iters), Line: line}
	// avg_lat (--output=latency) last: it wins over t_avg.
	for _, k := range []string{"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9", "avg_lat"} {
		if v, ok := num(k); ok {
			*lr.field(k) = &v
		}
	}
	if lr.Avg == nil && lr.Typical == nil && lr.Min == nil {
		if !okSize {
			return errString("results object without MsgSize, BW_average or latency fields")
		}
		return nil
	}
	if rep.Type == "" {
		rep.Type = "lat"
	}
	if len(rep.LatRows) < maxRows {
		rep.LatRows = append(rep.LatRows, lr)
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }
