package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// TestSnapshotHoldsWhatChecksJudge: a snapshot runs discovery and
// collection, not the checks, yet every check judges it as it judges the
// host it was taken from. The host is the fixture written as a directory,
// as a host's root is laid out; a fact the snapshot leaves out changes a
// verdict on it.
func TestSnapshotHoldsWhatChecksJudge(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		host string
		// judged is a verdict that only the fixture gives (its GPUs, its
		// NVLinks), so the test cannot pass on another host.
		judged string
	}{
		{"hgx-h200-8gpu-10nic.host", "gpu.present node pass GPUsVisible"},
		{"a100sxm-4gpu-nvlink-degraded.host", "nvlink.state GPU2 fail NVLinkDown"},
	} {
		host := c.host
		// The fixture is only read: both snapshots are taken of one copy,
		// and judged against one check of it.
		root := fakehost.Dir(t, repo+"/testdata/hosts/"+host)
		want, _, _ := run(t, "check", "--root", root, "--format", "json")
		w := verdicts(t, want)
		if !slices.Contains(w, c.judged) {
			t.Fatalf("%s: the fixture's verdicts lack %q (is it the fixture that was checked?):\n%s", host, c.judged, strings.Join(w, "\n"))
		}
		// --redact changes identifiers only, never a verdict.
		for _, redact := range []string{"--redact=false", "--redact"} {
			tgz := filepath.Join(t.TempDir(), "node.tgz")
			if out, errs, code := run(t, "snapshot", "--root", root, redact, "-o", tgz); code != ExitOK {
				t.Fatalf("%s %s: snapshot exit %d: %s %s", host, redact, code, out, errs)
			}
			got, _, _ := run(t, "check", "--root", tgz, "--format", "json")
			g := verdicts(t, got)
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
