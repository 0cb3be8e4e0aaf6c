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
// internal/machine, run commands (os/exec) or use cgo, by import path
// relative to the module; a trailing "/..." takes the subtree too.
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
	"internal/checks", "internal/model", "internal/result", "internal/analyze/ncclog", "internal/analyze/textio",
	"internal/topology", "internal/topology/level", "internal/topology/pairing",
	"internal/launch", "internal/rendezvous", "internal/report/sched", "internal/report/noise", "internal/campaign",
}

type pkg struct {
	ImportPath string
	Imports    []string
	CgoFiles   []string
	Error      *struct{ Err string }
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	touchSources(t)
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,CgoFiles,Error", module+"/...")
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

func allowed(rel string) bool {
	for _, a := range mayTouchTheMachine {
		if sub, ok := strings.CutSuffix(a, "/..."); ok {
			if rel == sub || strings.HasPrefix(rel, sub+"/") {
				return true
			}
		} else if rel == a {
			return true
		}
	}
	return false
}

// forbidden says why an import reaches the machine, or "".
func forbidden(imp string) string {
	switch {
	case imp == "os/exec":
		return "runs commands"
	case imp == "C":
		return "uses cgo"
	case imp == module+"/internal/machine" || strings.HasPrefix(imp, module+"/internal/machine/"):
		return "reads the machine"
	case strings.HasPrefix(imp, module+"/internal/native/"):
		return "loads vendor libraries"
	}
	return ""
}

// TestOnlyCollectionTouchesTheMachine: outside collection, the native layer
// and the runners, no package imports the door (internal/machine), os/exec,
// the native layer or cgo. Checks, the model, the analyzers and results are
// pure functions of collected data.
func TestOnlyCollectionTouchesTheMachine(t *testing.T) {
	pkgs := listPackages(t)
	seen := map[string]bool{}
	sawAllowedUse := false
	for _, p := range pkgs {
		if p.Error != nil {
			t.Errorf("%s: %s", p.ImportPath, p.Error.Err)
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		seen[rel] = true
		var why []string
		for _, imp := range p.Imports {
			if w := forbidden(imp); w != "" {
				why = append(why, imp+" ("+w+")")
			}
		}
		if len(p.CgoFiles) > 0 && !slices.Contains(p.Imports, "C") {
			why = append(why, "cgo files")
		}
		if len(why) == 0 {
			continue
		}
		if allowed(rel) {
			sawAllowedUse = true
			continue
		}
		t.Errorf("%s imports %s: only collection (internal/collect, internal/machine), the native layer and the runners may", rel, strings.Join(why, ", "))
	}
	for _, c := range mustBeClean {
		if !seen[c] {
			t.Errorf("go list did not report %s", c)
		}
	}
	if !sawAllowedUse {
		t.Error("no package touches the machine at all: the import rule is not looking")
	}
}

// TestTestSupportOnlyInTests: the test doubles under internal/testutil are
// imported by test files only (go list's Imports leaves test imports out),
// so no fake library or fixture builder reaches the binary.
func TestTestSupportOnlyInTests(t *testing.T) {
	const prefix = module + "/internal/testutil/"
	sawTestutil := false
	for _, p := range listPackages(t) {
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
