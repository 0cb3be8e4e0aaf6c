package nccltests

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// The -J output of nccl-tests (src/util.cu: version, args, env,
// nccl_version, config with devices, results, out_of_bounds,
// average_bus_bandwidth, errors). Doubles may be written as "nan" and
// booleans as strings, so the fields are decoded leniently.
type jsonFile struct {
	Version     *int             `json:"version"`
	Args        []string         `json:"args"`
	NCCLVersion textio.FlexFloat `json:"nccl_version"`
	Config      *struct {
		NThreads   textio.FlexFloat `json:"nthreads"`
		NGpus      textio.FlexFloat `json:"ngpus"`
		MinBytes   textio.FlexFloat `json:"minimum_bytes"`
		MaxBytes   textio.FlexFloat `json:"maximum_bytes"`
		StepFactor textio.FlexFloat `json:"step_factor"`
		StepBytes  textio.FlexFloat `json:"step_bytes"`
		Warmup     textio.FlexFloat `json:"warmup_iters"`
		Iterations textio.FlexFloat `json:"iterations"`
		AggIters   textio.FlexFloat `json:"aggregated_iterations"`
		Validation textio.FlexFloat `json:"validation"`
		Graph      textio.FlexFloat `json:"graph"`
		Devices    []jsonDevice     `json:"devices"`
	} `json:"config"`
	Results []struct {
		Size       textio.FlexFloat `json:"size"`
		Count      textio.FlexFloat `json:"count"`
		Type       string           `json:"type"`
		Redop      string           `json:"redop"`
		Root       json.RawMessage  `json:"root"`
		OutOfPlace *jsonMeasure     `json:"out_of_place"`
		InPlace    *jsonMeasure     `json:"in_place"`
	} `json:"results"`
	OutOfBounds *struct {
		Count textio.FlexFloat `json:"count"`
		Okay  json.RawMessage  `json:"okay"`
	} `json:"out_of_bounds"`
	AvgBusBW *struct {
		Bandwidth textio.FlexFloat `json:"bandwidth"`
		Okay      json.RawMessage  `json:"okay"`
	} `json:"average_bus_bandwidth"`
	Errors []string `json:"errors"`
}

type jsonDevice struct {
	Rank       textio.FlexFloat `json:"rank"`
	Group      textio.FlexFloat `json:"group"`
	Pid        textio.FlexFloat `json:"pid"`
	Hostname   string           `json:"hostname"`
	Device     textio.FlexFloat `json:"device"`
	DeviceHex  string           `json:"device_hex"`
	DeviceInfo string           `json:"device_info"`
}

type jsonMeasure struct {
	Time    textio.FlexFloat `json:"time"`
	CPUTime textio.FlexFloat `json:"cpu_time"`
	AlgBW   textio.FlexFloat `json:"alg_bw"`
	BusBW   textio.FlexFloat `json:"bus_bw"`
	NWrong  textio.FlexFloat `json:"nwrong"`
}

func analyzeJSON(name string, r io.Reader) (*Report, error) {
	lc := textio.NewLineCounter(r)
	dec := json.NewDecoder(lc)
	rep := &Report{Format: "json", Streams: 1}
	for {
		start := lc.LineAt(dec.InputOffset() + 1)
		var f jsonFile
		err := dec.Decode(&f)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, lc.JSONError(name, dec, err)
		}
		if f.Config == nil && f.Results == nil && f.AvgBusBW == nil {
			return nil, textio.Errorf(name, start, "JSON object is not nccl-tests output (no config, results or average_bus_bandwidth)")
		}
		if len(rep.Tests) >= maxTests {
			rep.DroppedTests++
			continue
		}
		rep.Tests = append(rep.Tests, jsonTest(&f, start))
		for _, e := range f.Errors {
			if strings.TrimSpace(e) != "" {
				rep.Failures = textio.AddQuote(rep.Failures, start, e)
			}
		}
	}
	if len(rep.Tests) == 0 {
		return nil, textio.Errorf(name, 1, "empty JSON input")
	}
	return rep, nil
}

func jsonTest(f *jsonFile, line int) *Test {
	t := &Test{Line: line}
	if len(f.Args) > 0 {
		t.Binary, t.CollectiveFrom = path.Base(f.Args[0]), "json"
	}
	if f.NCCLVersion.Valid {
		v := int(f.NCCLVersion.V)
		// NCCL_VERSION_CODE: major*10000 + minor*100 + patch from 2.9 on,
		// major*1000 + minor*100 + patch before.
		if v >= 10000 {
			t.NCCLVersion = fmt.Sprintf("%d.%d.%d", v/10000, v%10000/100, v%100)
		} else if v > 0 {
			t.NCCLVersion = fmt.Sprintf("%d.%d.%d", v/1000, v%1000/100, v%100)
		}
	}
	if c := f.Config; c != nil {
		t.Params = Params{
			NThread: int(c.NThreads.V), NGpus: int(c.NGpus.V), MinBytes: int64(c.MinBytes.V), MaxBytes: int64(c.MaxBytes.V),
			WarmupIters: int(c.Warmup.V), Iters: int(c.Iterations.V), AggIters: int(c.AggIters.V), Graph: int(c.Graph.V),
		}
		if c.StepFactor.Valid {
			t.Params.Step = strconv.FormatInt(int64(c.StepFactor.V), 10) + "(factor)"
		} else if c.StepBytes.Valid {
			t.Params.Step = strconv.FormatInt(int64(c.StepBytes.V), 10) + "(bytes)"
		}
		if c.Validation.Valid {
			v := int(c.Validation.V)
			t.Params.Validation = &v
		}
		for _, d := range c.Devices {
			t.Devices = append(t.Devices, Device{
				Rank: int(d.Rank.V), Group: int(d.Group.V), Pid: int(d.Pid.V), Host: strings.TrimSpace(d.Hostname),
				Device: int(d.Device.V), BusID: d.DeviceHex, Name: strings.TrimSpace(d.DeviceInfo),
			})
		}
	}
	for _, jr := range f.Results {
		r := collective.Row{Bytes: uint64(max(jr.Size.V, 0)), Count: uint64(max(jr.Count.V, 0)), Type: jr.Type, RedOp: strings.TrimSpace(jr.Redop), Line: line}
		var rs string
		if json.Unmarshal(jr.Root, &rs) == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(rs)); err == nil {
				r.Root = &v
			}
		} else {
			var rf float64
			if json.Unmarshal(jr.Root, &rf) == nil {
				v := int(rf)
				r.Root = &v
			}
		}
		r.OutOfPlace, r.InPlace = jr.OutOfPlace.measure(), jr.InPlace.measure()
		t.addRow(r)
	}
	if o := f.OutOfBounds; o != nil && o.Count.Valid {
		v := int64(o.Count.V)
		ok := v == 0
		if b, known := jsonBool(o.Okay); known {
			ok = b
		}
		t.OutOfBounds, t.OutOfBoundsOK, t.summary = &v, &ok, true
	}
	if a := f.AvgBusBW; a != nil && a.Bandwidth.Valid {
		t.AvgBusBW, t.AvgFrom, t.summary = a.Bandwidth.V, "printed", true
		if b, known := jsonBool(a.Okay); known {
			t.AvgCheck = map[bool]string{true: "OK", false: "FAILED"}[b]
		}
	}
	derive(t)
	return t
}

func (m *jsonMeasure) measure() *collective.Measure {
	if m == nil {
		return nil
	}
	tm := m.Time
	if !tm.Valid {
		tm = m.CPUTime
	}
	if !tm.Valid && !m.AlgBW.Valid && !m.BusBW.Valid {
		return nil
	}
	out := &collective.Measure{TimeUS: tm.V, AlgBW: m.AlgBW.V, BusBW: m.BusBW.V}
	if m.NWrong.Valid && m.NWrong.V >= 0 {
		w := int64(m.NWrong.V)
		out.Wrong = &w
	}
	return out
}

// jsonBool reads true/false written as a JSON bool or as a string.
func jsonBool(raw json.RawMessage) (value, known bool) {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch strings.ToLower(s) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}
