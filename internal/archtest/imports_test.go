package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gdrcheck/gdrcheck"

// mayTouchTheMachine are the packages allowed to read the machine through
// internal/machine, run commands (os/exec), load the vendor libraries or
// use cgo, by import path relative to the module; a trailing "/..." takes
// the subtree too. Every other package must not reach any of these, not
// even through the packages it imports.
var mayTouchTheMachine = []string{
	// Collection: the door, the snapshots behind it, and what reads through
	// it, discovery (internal/collect/discover, which builds topology.Host)
	// included.
	"internal/machine/...",
	"internal/collect/...",
	// The native layer: dlopen shims to the vendor libraries.
	"internal/native/...",
	// The runners that drive collection and the native layer.
	"internal/app",
	"internal/bench",
	"internal/cli",
	"cmd/...",
	// Development tools (tools/htmlcheck drives a browser).
	"tools/...",
	// Test support: fakehost materialises fixtures behind a machine.Root,
	// fakelib builds fake vendor libraries with the C compiler.
	"internal/testutil/fakehost",
	"internal/testutil/fakelib",
}

// mustBeClean are packages the rule must see and find clean: if one goes
// missing (renamed, or go list failed to report it) the test says so
// rather than pass on nothing.
var mustBeClean = []string{
	"internal/facts/gpu", "internal/facts/node", "internal/facts/pci", "internal/facts/counters", "internal/burn", "internal/profile", "internal/printable",
	"internal/checks", "internal/model", "internal/result", "internal/analyze/ncclog", "internal/textio",
	"internal/topology", "internal/topology/level", "internal/topology/pairing", "internal/bench/rdma",
	"internal/launch", "internal/rendezvous", "internal/report", "internal/report/dossier", "internal/report/fleet",
	"internal/report/html", "internal/report/diff", "internal/report/sched", "internal/report/noise", "internal/campaign",
}

type pkg struct {
	ImportPath string
	Imports    []string
	CgoFiles   []string
	Standard   bool
	DepOnly    bool
	Error      *struct{ Err string }
}

// listPackages lists the module's packages and everything they depend on
// (go list -deps), as built with cgo: what the released binary links.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	touchSources(t)
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Imports,CgoFiles,Standard,DepOnly,Error", module+"/...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, module), "/") }

func allowed(path string) bool {
	r := rel(path)
	for _, a := range mayTouchTheMachine {
		if sub, ok := strings.CutSuffix(a, "/..."); ok {
			if r == sub || strings.HasPrefix(r, sub+"/") {
				return true
			}
		} else if r == a {
			return true
		}
	}
	return false
}

// forbidden says why reaching p touches the machine, or "".
func forbidden(p pkg) string {
	imp := p.ImportPath
	switch {
	case imp == "os/exec":
		return "runs commands"
	case imp == module+"/internal/machine" || strings.HasPrefix(imp, module+"/internal/machine/"):
		return "reads the machine"
	case imp == module+"/internal/collect" || strings.HasPrefix(imp, module+"/internal/collect/"):
		return "collects through the machine"
	case strings.HasPrefix(imp, module+"/internal/native/"):
		return "loads vendor libraries"
	case len(p.CgoFiles) > 0 && !p.Standard:
		// The standard library's own cgo (net's resolver, os/user) is
		// optional: it builds without cgo. A module's cgo is not.
		return "uses cgo"
	}
	return ""
}

// violation is a package outside mayTouchTheMachine that reaches a
// forbidden one, with the chain of imports that leads there.
type violation struct {
	pkg   string
	chain []string // pkg ... the forbidden package
	why   string
}

func (v violation) String() string {
	short := make([]string, len(v.chain))
	for i, c := range v.chain {
		short[i] = rel(c)
		if short[i] == "" || !strings.HasPrefix(c, module) {
			short[i] = c
		}
	}
	return rel(v.pkg) + " reaches " + short[len(short)-1] + " (" + v.why + ") through " + strings.Join(short, " -> ")
}

// violations walks the import graph from every module package that is not
// allowed to touch the machine and reports the first forbidden package each
// reaches, by the shortest chain of imports.
func violations(pkgs []pkg) []violation {
	byPath := map[string]pkg{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	var out []violation
	for _, p := range pkgs {
		if p.DepOnly || !strings.HasPrefix(p.ImportPath, module) || allowed(p.ImportPath) {
			continue
		}
		if w := forbidden(p); w != "" {
			out = append(out, violation{p.ImportPath, []string{p.ImportPath}, w})
			continue
		}
		// Breadth first, so the chain printed is a shortest one.
		prev := map[string]string{p.ImportPath: ""}
		queue := []string{p.ImportPath}
	walk:
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			for _, imp := range byPath[cur].Imports {
				if _, seen := prev[imp]; seen {
					continue
				}
				prev[imp] = cur
				if w := forbidden(byPath[imp]); w != "" {
					var chain []string
					for c := imp; c != ""; c = prev[c] {
						chain = append([]string{c}, chain...)
					}
					out = append(out, violation{p.ImportPath, chain, w})
					break walk
				}
				queue = append(queue, imp)
			}
		}
	}
	return out
}

// TestOnlyCollectionTouchesTheMachine: outside collection, the native layer
// and the runners, no package reaches the door (internal/machine),
// collection, os/exec, the native layer or cgo, directly or through what it
// imports. Facts, the profile, checks, the model, the analyzers, the
// reports and the campaign are pure functions of collected data.
func TestOnlyCollectionTouchesTheMachine(t *testing.T) {
	pkgs := listPackages(t)
	seen := map[string]bool{}
	sawAllowedUse := false
	for _, p := range pkgs {
		if p.Error != nil {
			t.Errorf("%s: %s", p.ImportPath, p.Error.Err)
			continue
		}
		if p.DepOnly || !strings.HasPrefix(p.ImportPath, module) {
			continue
		}
		seen[rel(p.ImportPath)] = true
		if allowed(p.ImportPath) && (forbidden(p) != "" || slices.Contains(p.Imports, "os/exec")) {
			sawAllowedUse = true
		}
	}
	for _, v := range violations(pkgs) {
		t.Errorf("%s: only collection (internal/collect, internal/machine), the native layer and the runners may", v)
	}
	for _, c := range mustBeClean {
		if !seen[c] {
			t.Errorf("go list did not report %s", c)
		}
	}
	if !sawAllowedUse {
		t.Error("no allowed package touches the machine: the rule is not looking")
	}
}

// The rule itself, on import graphs made up for it: a package that reaches
// the door through two pure-looking packages is caught and the chain named;
// an allowed package, the standard library's optional cgo and a clean
// package pass.
func TestViolationsFollowImports(t *testing.T) {
	m := func(r string) string { return module + "/" + r }
	graph := []pkg{
		{ImportPath: m("internal/report/fleet"), Imports: []string{m("internal/checks"), "net"}},
		{ImportPath: m("internal/checks"), Imports: []string{m("internal/topology")}},
		{ImportPath: m("internal/topology"), Imports: []string{m("internal/collect/nvml/live")}},
		{ImportPath: m("internal/collect/nvml/live"), Imports: []string{"github.com/NVIDIA/go-nvml/pkg/nvml"}},
		{ImportPath: "github.com/NVIDIA/go-nvml/pkg/nvml", CgoFiles: []string{"nvml.go"}, DepOnly: true},
		{ImportPath: "net", CgoFiles: []string{"cgo_unix.go"}, Standard: true, DepOnly: true},
		{ImportPath: m("internal/hw"), Imports: []string{"net"}},
		{ImportPath: m("internal/model"), Imports: []string{m("internal/hw"), "github.com/NVIDIA/go-nvml/pkg/nvml"}},
		{ImportPath: m("internal/app"), Imports: []string{m("internal/machine"), "os/exec"}},
		{ImportPath: m("internal/machine"), Imports: []string{"os/exec"}},
		{ImportPath: "os/exec", Standard: true, DepOnly: true},
	}
	var got []string
	for _, v := range violations(graph) {
		got = append(got, v.String())
	}
	want := []string{
		"internal/report/fleet reaches internal/collect/nvml/live (collects through the machine) through internal/report/fleet -> internal/checks -> internal/topology -> internal/collect/nvml/live",
		"internal/checks reaches internal/collect/nvml/live (collects through the machine) through internal/checks -> internal/topology -> internal/collect/nvml/live",
		"internal/topology reaches internal/collect/nvml/live (collects through the machine) through internal/topology -> internal/collect/nvml/live",
		"internal/model reaches github.com/NVIDIA/go-nvml/pkg/nvml (uses cgo) through internal/model -> github.com/NVIDIA/go-nvml/pkg/nvml",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTestSupportOnlyInTests: the test doubles under internal/testutil are
// imported by test files only (go list's Imports leaves test imports out),
// so no fake library or fixture builder reaches the binary.
func TestTestSupportOnlyInTests(t *testing.T) {
	const prefix = module + "/internal/testutil/"
	sawTestutil := false
	for _, p := range listPackages(t) {
		if p.DepOnly || !strings.HasPrefix(p.ImportPath, module) {
			continue
		}
		if strings.HasPrefix(p.ImportPath, prefix) {
			sawTestutil = true
			continue // the doubles may build on each other
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, prefix) {
				t.Errorf("%s imports %s outside its tests", p.ImportPath, imp)
			}
		}
	}
	if !sawTestutil {
		t.Error("go list reported no package under internal/testutil: the rule is not looking")
	}
}

// touchSources opens every Go file of the module, so that go test's cache,
// which knows the files a test opened but not what go list read, runs the
// rules again after any source changes.
func touchSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != "../.." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			return f.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
