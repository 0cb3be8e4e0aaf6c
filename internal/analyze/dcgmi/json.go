package dcgmi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// dcgmi diag --json: {"DCGM Diagnostic" (4.x) or "DCGM GPU Diagnostic"
// (3.x): {"test_categories": [{"category", "tests": [{"name", "results":
// [{"entity_id"/"gpu_id", "status", "warnings": [{"warning", "error_id",
// "error_category"}], "info"}], "test_summary"}]}]}, "metadata" (4.x) or
// "version" (3.x)}. Both shapes are walked generically.
func analyzeJSON(name string, r io.Reader) (*Report, error) {
	lc := textio.NewLineCounter(r)
	dec := json.NewDecoder(lc)
	dec.UseNumber()
	var root map[string]any
	if err := lc.DecodeAll(name, dec, &root); err != nil {
		return nil, err
	}
	diag := obj(root["DCGM Diagnostic"])
	if diag == nil {
		diag = obj(root["DCGM GPU Diagnostic"])
	}
	if diag == nil {
		return nil, textio.Errorf(name, 1, `JSON has no "DCGM Diagnostic" or "DCGM GPU Diagnostic" object`)
	}
	rep := &Report{Format: "json", Complete: true}
	meta := obj(root["metadata"])
	rep.DCGMVersion = cmp.Or(str(meta["version"]), str(root["version"]), str(diag["version"]))
	rep.DriverVersion = cmp.Or(str(meta["Driver Version Detected"]), str(root["Driver Version Detected"]))
	for _, id := range arr(root["GPU Device IDs"]) {
		rep.DeviceIDs = append(rep.DeviceIDs, str(id))
	}
	for _, g := range arr(root["entity_groups"]) {
		for _, e := range arr(obj(g)["entities"]) {
			if id := str(obj(e)["device_id"]); id != "" {
				rep.DeviceIDs = append(rep.DeviceIDs, id)
			}
		}
	}
	if e := str(diag["runtime_error"]); e != "" {
		rep.Errors = append(rep.Errors, textio.Quote{Line: 0, Text: e})
	}
	for _, c := range arr(diag["test_categories"]) {
		cat := obj(c)
		for _, tv := range arr(cat["tests"]) {
			tj := obj(tv)
			if tj == nil || len(rep.Tests) >= maxTests {
				continue
			}
			t := &Test{Name: str(tj["name"]), Category: str(cat["category"])}
			seen := map[string]bool{}
			for _, rv := range arr(tj["results"]) {
				res := obj(rv)
				status := str(res["status"])
				g, hasGPU := gpuOf(res)
				if hasGPU && len(t.GPUs) < maxMsgs {
					t.GPUs = append(t.GPUs, GPUResult{g, status})
				}
				addMessages(t, res, g, hasGPU, seen)
				if !hasGPU {
					t.Result = worst(t.Result, status)
				}
			}
			if sum := obj(tj["test_summary"]); sum != nil {
				t.Result = str(sum["status"])
				addMessages(t, sum, 0, false, seen)
			} else if t.Result == "" {
				for _, g := range t.GPUs {
					t.Result = worst(t.Result, g.Result)
				}
			}
			if t.Name == "" {
				t.Name = "(unnamed)"
			}
			rep.Tests = append(rep.Tests, t)
		}
	}
	if len(rep.Tests) == 0 && len(rep.Errors) == 0 {
		return nil, textio.Errorf(name, 1, "dcgmi JSON has no tests and no runtime_error")
	}
	return rep, nil
}

func gpuOf(res map[string]any) (int, bool) {
	if grp := str(res["entity_group"]); grp != "" && grp != "GPU" {
		return 0, false
	}
	for _, k := range []string{"entity_id", "gpu_id"} {
		if v, ok := res[k]; ok {
			if n, err := strconv.Atoi(str(v)); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

func addMessages(t *Test, res map[string]any, g int, hasGPU bool, seen map[string]bool) {
	for _, wv := range arr(res["warnings"]) {
		m := Message{}
		if w := obj(wv); w != nil {
			m.Text = cmp.Or(str(w["warning"]), str(w["warnings"]), str(w["error"]))
			if v, err := strconv.Atoi(str(w["error_id"])); err == nil {
				m.ErrorID = &v
			}
			if v, err := strconv.Atoi(str(w["error_category"])); err == nil {
				m.Category = &v
			}
		} else {
			m.Text = str(wv)
		}
		if hasGPU {
			gg := g
			m.GPU = &gg
		}
		if m.Text == "" || seen["w"+m.Text] || len(t.Warnings) >= maxMsgs {
			continue
		}
		seen["w"+m.Text] = true
		t.Warnings = append(t.Warnings, m)
	}
	infos := arr(res["info"])
	if s := str(res["info"]); s != "" && infos == nil {
		infos = []any{s}
	}
	for _, iv := range infos {
		txt := str(iv)
		if txt == "" || seen["i"+txt] || len(t.Info) >= maxMsgs {
			continue
		}
		seen["i"+txt] = true
		m := Message{Text: txt}
		if hasGPU {
			gg := g
			m.GPU = &gg
		}
		t.Info = append(t.Info, m)
	}
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func arr(v any) []any {
	a, _ := v.([]any)
	return a
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case json.Number:
		return x.String()
	case bool:
		return fmt.Sprint(x)
	}
	return ""
}
