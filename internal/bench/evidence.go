package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
)

// NCCLEvidence is what NCCL itself wrote during a run: its debug log and
// its topology and graph dumps.
type NCCLEvidence struct {
	Dir     string   `json:"dir"`
	Files   []string `json:"files"`
	Debug   string   `json:"nccl_debug"`
	Subsys  string   `json:"nccl_debug_subsys"`
	Summary []string `json:"summary,omitempty"`
}

// NCCLDebug is the configuration that makes NCCL write its evidence into
// Dir: the NCCL_DEBUG* and NCCL_*_DUMP_FILE variables and
// NCCL_RUN_DIAGNOSTICS, each unless the user already set it.
type NCCLDebug struct {
	Dir string
	// Getenv reads the environment the settings complete (os.LookupEnv).
	Getenv func(string) (string, bool)
}

// Names are every variable Settings may set (what a test that applies
// them restores).
func (c NCCLDebug) Names() []string {
	var out []string
	for _, kv := range c.all() {
		out = append(out, kv[0])
	}
	return out
}

// Settings are the variables to set, in a stable order: only those the
// environment does not already have.
func (c NCCLDebug) Settings() [][2]string {
	get := c.Getenv
	if get == nil {
		get = os.LookupEnv
	}
	return slices.DeleteFunc(c.all(), func(kv [2]string) bool { _, set := get(kv[0]); return set })
}

// all are the variables and their values, in a stable order.
func (c NCCLDebug) all() [][2]string {
	return [][2]string{
		{"NCCL_DEBUG", "INFO"},
		{"NCCL_DEBUG_SUBSYS", "INIT,NET,GRAPH,ENV"},
		{"NCCL_DEBUG_FILE", filepath.Join(c.Dir, "nccl-debug.%h.%p.log")},
		{"NCCL_TOPO_DUMP_FILE", filepath.Join(c.Dir, "nccl-topo.xml")},
		{"NCCL_GRAPH_DUMP_FILE", filepath.Join(c.Dir, "nccl-graph.xml")},
		// NCCL's own readiness checks at communicator set-up (2.31 and
		// later: P2P between the GPU pairs it will use, ib_write_bw between
		// nodes, the ranks' inventories compared), printed as "NCCL DIAG"
		// lines that nccl.diag judges; an older NCCL ignores the variable
		// (it reads only the parameters it knows). NCCL_RUN_DIAGNOSTICS=0
		// in the environment keeps them off.
		{"NCCL_RUN_DIAGNOSTICS", "1"},
	}
}

// Apply sets the variables in this process's environment and returns the
// evidence record of the run.
//
// It must run once, before NCCL is loaded (dlopen): NCCL reads these
// variables from the process environment, once, when it initialises, and
// nothing else passes settings to it. Applying them before the library is
// in the process means no call of this process can initialise NCCL without
// them.
func (c NCCLDebug) Apply() (*NCCLEvidence, error) {
	for _, kv := range c.Settings() {
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	return &NCCLEvidence{Dir: c.Dir, Debug: os.Getenv("NCCL_DEBUG"), Subsys: os.Getenv("NCCL_DEBUG_SUBSYS")}, nil
}

// Collect lists the files NCCL wrote and summarises its debug logs.
func (ev *NCCLEvidence) Collect() {
	ents, _ := os.ReadDir(ev.Dir)
	ev.Files = nil
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "nccl-") {
			ev.Files = append(ev.Files, e.Name())
		}
	}
	slices.Sort(ev.Files)
	ev.Summary = summarizeNCCLLogs(ev.Dir, ev.Files)
}

// summarizeNCCLLogs reads NCCL's debug logs of the run and returns their
// verdicts (GDR, P2P, network, version) as lines.
func summarizeNCCLLogs(dir string, files []string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasPrefix(f, "nccl-debug.") {
			continue
		}
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			out = append(out, f+": "+err.Error())
			continue
		}
		_, vs, err := ncclog.Analyze(f, fh)
		fh.Close()
		if err != nil {
			out = append(out, f+": "+err.Error())
			continue
		}
		for _, v := range vs {
			out = append(out, fmt.Sprintf("%s %s %s: %s", strings.ToUpper(string(v.Status)), v.ID, v.Subject, v.Message))
		}
	}
	return out
}
