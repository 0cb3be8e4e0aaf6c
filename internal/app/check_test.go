package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// TestXidWindowFromCaptureTime: a snapshot judged days after it was taken
// measures the Xid window from its capture time, and the verdict carries
// that time and the snapshot's host (issue 13, item 5).
func TestXidWindowFromCaptureTime(t *testing.T) {
	host, _ := identifiedHost(t)
	out := filepath.Join(t.TempDir(), "snap")
	if _, err := testSession().Snapshot(t.Context(), SnapshotOptions{Node: NodeOptions{Root: host, Timeout: time.Minute}, Out: out}); err != nil {
		t.Fatal(err)
	}
	captured := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	mf := filepath.Join(out, snapshot.ManifestFile)
	b, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["created_at"] = captured
	b, _ = json.Marshal(m)
	xid := captured.Add(-time.Hour).Format("2006-01-02T15:04:05,000000-07:00") + " NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
	if err := os.WriteFile(mf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "commands/dmesg.txt"), []byte(xid), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := Check(t.Context(), NodeOptions{Root: out, Timeout: time.Minute}, CheckOptions{Timeout: 10 * time.Second, XidWindow: 2 * time.Hour, Only: []string{"gpu.health"}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range j.Checks.Results {
		if r.Subject == "GPU0-xid" {
			found = true
			if r.Status != result.Fail || !strings.Contains(r.Message, "79") {
				t.Errorf("an Xid 79 an hour before capture, judged three days later: %s %s %s", r.Status, r.Reason, r.Message)
			}
		}
	}
	if !found {
		t.Errorf("no GPU0-xid result: %+v", j.Checks.Results)
	}
	if v := j.Checks.Verdict; !v.Time.Equal(captured) || v.Status != checks.NotReady || v.Host != j.Host.Hostname {
		t.Errorf("verdict %+v, want NOT READY at %s", v, captured)
	}
}

// TestSerialsInInventory: the serials the driver reports stay in the
// node's summary (run's inventory and run.json), by bus id.
func TestSerialsInInventory(t *testing.T) {
	host, _ := identifiedHost(t)
	nr, err := testSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: host, Timeout: time.Minute}, Checks: CheckOptions{Timeout: 10 * time.Second, XidWindow: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	if len(nr.Summary.GPUs) == 0 {
		t.Fatal("no GPU in the summary")
	}
	for i, g := range nr.Summary.GPUs {
		if want := fmt.Sprintf("16540240759%02d", i); g.Serial != want {
			t.Errorf("GPU%d at %s: serial %q, want %q", g.Index, g.Address, g.Serial, want)
		}
	}
}
