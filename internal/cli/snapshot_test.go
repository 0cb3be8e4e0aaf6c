package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// TestSnapshotHoldsWhatChecksJudge: a snapshot runs discovery and
// collection, not the checks, yet every check judges it as it judges the
// host it was taken from.
func TestSnapshotHoldsWhatChecksJudge(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"hgx-h200-8gpu-10nic.host", "a100sxm-4gpu-nvlink-degraded.host"} {
		// --redact changes identifiers only, never a verdict.
		for _, redact := range []string{"--redact=false", "--redact"} {
			root := fakehost.Root(t, repo+"/testdata/hosts/"+host).Dir()
			tgz := filepath.Join(t.TempDir(), "node.tgz")
			if out, errs, code := run(t, "snapshot", "--root", root, redact, "-o", tgz); code != ExitOK {
				t.Fatalf("%s %s: snapshot exit %d: %s %s", host, redact, code, out, errs)
			}
			want, _, _ := run(t, "check", "--root", root, "--format", "json")
			got, _, _ := run(t, "check", "--root", tgz, "--format", "json")
			w, g := verdicts(t, want), verdicts(t, got)
			if len(w) == 0 {
				t.Fatalf("%s: no verdicts in\n%s", host, want)
			}
			if !slices.Equal(g, w) {
				t.Errorf("%s %s: on the snapshot\n  %v\nwant\n  %v", host, redact, g, w)
			}
		}
	}
}

// verdicts are the id, subject, status and reason of every result in a
// JSON document, wherever the results sit in it.
func verdicts(t *testing.T, doc string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if id, ok := x["id"].(string); ok {
				if reason, ok := x["reason"].(string); ok {
					out = append(out, id+" "+x["subject"].(string)+" "+x["status"].(string)+" "+reason)
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	slices.Sort(out)
	return out
}
