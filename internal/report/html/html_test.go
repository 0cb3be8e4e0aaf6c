package html

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/ansitest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func render(t *testing.T, r *dossier.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every fixture dossier renders to its golden file (go test -update
// rewrites them; testdata/NAME.json is the dossier it was rendered from).
func TestGolden(t *testing.T) {
	fs := fixtures(t)
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r := fs[name]
			got := render(t, r)
			file := filepath.Join("testdata", name+".html")
			if *update {
				var js bytes.Buffer
				if err := r.WriteJSON(&js); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join("testdata", name+".json"), js.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the rendering (run with -update and review the diff)", file)
			}
			checkSelfContained(t, got)
			checkSVG(t, got)
		})
	}
}

// The committed JSON renders as the golden file: the page is a function
// of report.json alone (what re-rendering a dossier relies on).
func TestRenderFromReportJSON(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no testdata/*.json: run the tests with -update")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			r, err := dossier.Decode(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".html")
			if err != nil {
				t.Fatal(err)
			}
			if got := render(t, r); got != string(want) {
				t.Errorf("%s renders differently from its golden HTML", f)
			}
		})
	}
}

var (
	// externalRef finds what would make a browser fetch something: an
	// src/href/action/poster/srcset/xlink:href attribute with a URL that is
	// not a fragment (#id), CSS @import and url(...), <link>, <script src>,
	// <iframe>, <object>, <embed>, <base>.
	attrPair = regexp.MustCompile(`([a-zA-Z:-]+)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`)
	refAttrs = map[string]bool{"src": true, "href": true, "action": true, "poster": true, "srcset": true, "data": true,
		"xlink:href": true, "formaction": true, "background": true, "ping": true, "manifest": true, "codebase": true}
	cssRef   = regexp.MustCompile(`(?i)@import|url\s*\(`)
	elemRef  = regexp.MustCompile(`(?i)<\s*(link|script|iframe|object|embed|base|img|audio|video|source|frame)\b`)
	metaRefr = regexp.MustCompile(`(?i)http-equiv\s*=\s*["']?refresh`)
	tagRe    = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	styleRe  = regexp.MustCompile(`(?is)<style[^>]*>.*?</style>`)
)

// checkSelfContained fails the test on what selfContained finds.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, p := range selfContained(page) {
		t.Error(p)
	}
}

// selfContained lists anything in page that a browser would load from
// elsewhere: the only references allowed are fragments (#id).
func selfContained(page string) []string {
	var out []string
	// Attributes are looked for inside tags only: text that shows a
	// planted "<img src=...>" escaped is not a reference.
	for _, tag := range tagRe.FindAllString(page, -1) {
		for _, m := range attrPair.FindAllStringSubmatch(tag, -1) {
			name, val := strings.ToLower(m[1]), strings.Trim(m[2], `"'`)
			if refAttrs[name] && !strings.HasPrefix(strings.TrimSpace(val), "#") {
				out = append(out, "external reference: "+m[0])
			}
			if name == "style" && cssRef.MatchString(val) {
				out = append(out, "CSS reference in a style attribute: "+m[0])
			}
		}
	}
	for _, st := range styleRe.FindAllString(page, -1) {
		if m := cssRef.FindString(st); m != "" {
			out = append(out, "CSS reference: "+m)
		}
	}
	if m := elemRef.FindString(page); m != "" {
		out = append(out, "element that loads or runs something: "+m)
	}
	if metaRefr.MatchString(page) {
		out = append(out, "meta refresh")
	}
	return out
}

// checkSVG fails the test on what svgProblems finds.
func checkSVG(t *testing.T, page string) {
	t.Helper()
	for _, p := range svgProblems(page) {
		t.Error(p)
	}
}

// svgProblems decodes every <svg> block as XML: each must be well-formed.
func svgProblems(page string) []string {
	var out []string
	n := 0
	rest := page
	for {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</svg>")
		if j < 0 {
			return append(out, "<svg> without </svg>")
		}
		block := rest[i : i+j+len("</svg>")]
		rest = rest[i+j+len("</svg>"):]
		n++
		d := xml.NewDecoder(strings.NewReader(block))
		d.Strict = true
		depth := 0
		for {
			tok, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				out = append(out, fmt.Sprintf("svg block %d is not well-formed XML: %v: %.200s", n, err, block))
				break
			}
			switch tok.(type) {
			case xml.StartElement:
				depth++
			case xml.EndElement:
				depth--
			}
		}
		if depth != 0 {
			out = append(out, fmt.Sprintf("svg block %d: unbalanced elements", n))
		}
	}
	return out
}

// The checkers catch what they must: a page with each kind of outside
// reference, and broken SVG.
func TestCheckersCatch(t *testing.T) {
	for _, bad := range []string{
		`<img src="http://x/a.png">`, `<a href="https://x/">x</a>`, `<a href="//x/">x</a>`, `<style>@import "x.css";</style>`,
		`<div style="background:url(http://x/)">`, `<script src="a.js"></script>`, `<link rel="stylesheet" href="a.css">`,
		`<svg><image xlink:href="http://x/a.png"/></svg>`, `<meta http-equiv="refresh" content="0;url=http://x/">`,
	} {
		if len(selfContained(bad)) == 0 {
			t.Errorf("selfContained passed %q", bad)
		}
	}
	if p := selfContained(`<a href="#checks">checks</a>`); len(p) != 0 {
		t.Errorf("a fragment link is flagged: %v", p)
	}
	for _, bad := range []string{`<svg><text>a < b</text></svg>`, `<svg><g></svg>`, `<svg><text>x</svg>`} {
		if len(svgProblems(bad)) == 0 {
			t.Errorf("svgProblems passed %q", bad)
		}
	}
}

// Hostile strings in the report (a host name, a message, an NIC name, a
// log's version line) come out escaped: no markup of theirs survives, no
// terminal escape is written raw, and the SVG stays well-formed.
func TestHostileInputEscaped(t *testing.T) {
	r := fixtures(t)["hgx-h200-healthy"]
	payload := hostilePayload
	r.Verdict.Host = payload
	r.Inventory.Host = payload
	r.Inventory.Kernel = payload
	r.Run.Command = append(r.Run.Command, payload)
	r.Results = append(r.Results, result.Result{ID: "x.hostile", Status: result.Fail, Subject: "GPU0", Reason: "Planted", Message: payload,
		Evidence: []result.Evidence{{Source: payload, Value: payload}}, Remedy: payload})
	r.Inventory.NICs[0].Name = payload
	r.Inventory.NICs[0].Firmware = payload
	r.Topology.Summary.GPUs[0].Name = payload
	r.Topology.DataPaths[0].Hops[0].Detail = payload
	r.Topology.DataPaths[0].Hops[0].Evidence = append(r.Topology.DataPaths[0].Hops[0].Evidence, "result:x.hostile GPU0")
	r.Measurements.Basis = payload
	r.Measurements.Copies[0].Test = payload
	r.Measurements.Collectives[0].Collective = payload
	r.NCCL[0].Versions = append(r.NCCL[0].Versions, payload)
	r.Topology.Summary.GPUs[0].Upstream = append([]string{payload + " (switch-upstream)"}, r.Topology.Summary.GPUs[0].Upstream...)
	r.Topology.Summary.NVSwitches = append(r.Topology.Summary.NVSwitches, payload)
	r.Topology.Summary.Pairing.Notes = append(r.Topology.Summary.Pairing.Notes, payload)
	r.Topology.GPULinks[0].Level = payload
	r.Inventory.NotCollected = append(r.Inventory.NotCollected, payload)
	r.Inventory.NICs[0].Ports[0].State = payload
	r.Phases = append(r.Phases, dossier.Phase{Name: payload, Status: payload, Reason: payload})
	r.Artifacts = append(r.Artifacts, dossier.Artifact{Name: payload, Path: payload, Kind: payload, SHA256: payload})
	r.Interrupted, r.Complete = payload, false
	page := render(t, r)
	checkHostilePage(t, "report.html", page)
}

// hostilePayload is what the hostile tests plant in every value: markup, an
// SVG end tag, terminal escapes, a right-to-left override.
const hostilePayload = `<script>alert(1)</script>"'><img src=http://evil.example/x.png>` + ansitest.Payload + "\u202e</svg>&amp;"

// checkHostilePage checks a page rendered from values that carry
// hostilePayload: none of it raw, all of it shown escaped, and the page
// still self-contained with well-formed drawings.
func checkHostilePage(t *testing.T, name, page string) {
	t.Helper()
	for _, bad := range []string{"<script", "<img", "\x1b", "\u202e", "\r", "</svg>&amp;"} {
		if strings.Contains(page, bad) {
			t.Errorf("%s holds %q raw", name, bad)
		}
	}
	ansitest.Clean(t, name, page)
	ansitest.Shows(t, name, page)
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("%s: the planted text is not shown escaped", name)
	}
	checkSelfContained(t, page)
	checkSVG(t, page)
}

// A part nothing judged is never drawn or listed as passing.
func TestUnjudgedIsNotPass(t *testing.T) {
	r := fixtures(t)["no-gpu"]
	r.Results = nil
	page := render(t, r)
	if strings.Contains(page, `class="hop st-pass"`) {
		t.Error("a hop is shown passing without any result")
	}
	if got := worst(nil); got != "" {
		t.Errorf("worst(nil) = %q, want none", got)
	}
	if got := worst([]result.Result{{Status: result.Skip}}); got != "" {
		t.Errorf("worst(skip) = %q, want none", got)
	}
}

// A report with nothing in it (discovery failed before anything was
// found) still renders: a page that says so, valid and self-contained.
func TestEmptyReport(t *testing.T) {
	page := render(t, &dossier.Report{})
	for _, want := range []string{"No topology to draw.", "No GPU found: no data path to show.", "Not measured in this run.", "Incomplete dossier", "NO VERDICT"} {
		if !strings.Contains(page, want) {
			t.Errorf("the empty report's page lacks %q", want)
		}
	}
	checkSelfContained(t, page)
	checkSVG(t, page)
	if err := Render(io.Discard, nil); err == nil {
		t.Error("Render(nil) did not fail")
	}
}

// A library's multi-line reason (where it looked) shows as its sentence and
// a folded list, never as a literal "\n".
func TestLibraryReasonLines(t *testing.T) {
	r := fixtures(t)["hgx-h200-healthy"]
	r.Inventory.CUDARuntime = dossier.Library{Probed: true, Error: "CUDA runtime not found; searched:\n  libcudart.so.13: No such file\n  /usr/lib64/libcudart.so.13: no such file"}
	page := render(t, r)
	if strings.Contains(page, `\n`) || !strings.Contains(page, "not loaded: CUDA runtime not found; searched:<details><summary>where it looked</summary>") ||
		!strings.Contains(page, `<li class="mono">/usr/lib64/libcudart.so.13: no such file</li>`) {
		i := strings.Index(page, "CUDA runtime not found")
		t.Errorf("%.400s", page[max(i, 0):])
	}
}

// RDMA runs are drawn as a table (never "not measured" when there are
// some), and a latency copy is a time, not a bar on a bandwidth axis.
func TestRDMAAndLatencyShown(t *testing.T) {
	r := fixtures(t)["hgx-h200-healthy"]
	r.Measurements.RDMA = []dossier.RDMAMeasurement{{ID: "bench.rdma.GPU0-mlx5_3.cuda", Job: "bench.rdma", Test: "ib_write_bw", GPU: 0, NIC: "mlx5_3", Port: 1, Memory: "cuda", Gbps: 391.5, Status: result.Pass}}
	r.Measurements.Copies = append(r.Measurements.Copies, dossier.CopyMeasurement{ID: "copy.latency.GPU0", Test: "latency", Device: 0, Peer: -1, TimeUS: 8.25, Valid: true, Status: result.Unknown})
	page := render(t, r)
	for _, want := range []string{`<td class="mono">GPU0-mlx5_3:1</td><td>cuda</td><td>loopback</td><td class="num">391.5</td>`, "Copy latency (the smallest copy's time, not a bandwidth): GPU0 8.25 µs."} {
		if !strings.Contains(page, want) {
			t.Errorf("lacks %q", want)
		}
	}
	if strings.Contains(page, "Copy latency: bandwidth per GPU") || strings.Contains(page, "this release's dossier has no RDMA") {
		t.Error("latency drawn as a bandwidth, or RDMA said not measured")
	}
}

// The drawing gives the GPUs' rail NICs and the other NICs (front-end,
// storage) fabrics of their own, and calls an NVSwitch system's NVLink
// one domain.
func TestSeparateFabrics(t *testing.T) {
	page := render(t, fixtures(t)["hgx-h200-healthy"])
	for _, want := range []string{"InfiniBand rails: the GPUs&#39; NICs", "Ethernet: no GPU (front-end, storage)", "one NVLink domain: 4 NVSwitch(es) joining all 8 GPUs"} {
		if !strings.Contains(page, want) {
			t.Errorf("lacks %q", want)
		}
	}
	if strings.Contains(page, ">network fabric") {
		t.Error("one network fabric for every NIC")
	}
	// The fixture's GPUs hang off two NUMA nodes: still one NVLink domain.
	if n, bands := strings.Count(page, "<title>NVLink fabric</title>"), strings.Count(page, ">NUMA node "); n != 1 || bands < 2 {
		t.Errorf("%d NVLink domains drawn over %d NUMA bands; want one over several", n, bands)
	}
}
