package bench

import (
	"path/filepath"
	"testing"
)

// NCCL's debug settings point into the run's folder, except where the user
// set a variable already.
func TestNCCLDebugKeepsTheUsersSettings(t *testing.T) {
	user := map[string]string{"NCCL_DEBUG": "WARN", "NCCL_TOPO_DUMP_FILE": "/tmp/mine.xml", "NCCL_RUN_DIAGNOSTICS": "0"}
	c := NCCLDebug{Dir: "/out", Getenv: func(k string) (string, bool) { v, ok := user[k]; return v, ok }}
	got := map[string]string{}
	for _, kv := range c.Settings() {
		got[kv[0]] = kv[1]
	}
	want := map[string]string{
		"NCCL_DEBUG_SUBSYS":    "INIT,NET,GRAPH,ENV",
		"NCCL_DEBUG_FILE":      filepath.Join("/out", "nccl-debug.%h.%p.log"),
		"NCCL_GRAPH_DUMP_FILE": filepath.Join("/out", "nccl-graph.xml"),
	}
	if len(got) != len(want) {
		t.Fatalf("settings %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// NCCL's own diagnostics are asked for unless the environment says
// otherwise.
func TestNCCLDebugAsksForDiagnostics(t *testing.T) {
	c := NCCLDebug{Dir: "/out", Getenv: func(string) (string, bool) { return "", false }}
	for _, kv := range c.Settings() {
		if kv[0] == "NCCL_RUN_DIAGNOSTICS" {
			if kv[1] != "1" {
				t.Errorf("NCCL_RUN_DIAGNOSTICS=%s", kv[1])
			}
			return
		}
	}
	t.Error("NCCL_RUN_DIAGNOSTICS not set")
}
