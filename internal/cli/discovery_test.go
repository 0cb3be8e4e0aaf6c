package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// TestUnidentifiedGPUFailsCheck: a GPU whose vendor is garbage, missing,
// a directory or a link loop used to vanish from the topology while
// check exited 0 (review D8, rows 36, 43, 44, 47). Now node.discovery
// names the device and gpu.present the GPU the driver still reports.
func TestUnidentifiedGPUFailsCheck(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(vendor string) error
	}{
		{"garbage", func(v string) error { return os.WriteFile(v, []byte("\x00\xffgarbage\n"), 0o644) }},
		{"missing", os.Remove},
		{"a directory", func(v string) error {
			if err := os.Remove(v); err != nil {
				return err
			}
			return os.Mkdir(v, 0o755)
		}},
		{"a link loop", func(v string) error {
			if err := os.Remove(v); err != nil {
				return err
			}
			return os.Symlink("vendor", v)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fakehost.Dir(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
			dev, err := filepath.EvalSymlinks(filepath.Join(root, "sys/bus/pci/devices/0000:18:00.0"))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.damage(filepath.Join(dev, "vendor")); err != nil {
				t.Fatal(err)
			}
			out, errs, code := run(t, "check", "--root", root, "--only", "node.,gpu.present")
			for _, want := range []string{"DeviceUnidentified", "PCI function 0000:18:00.0 could not be identified", "GPU 0 at 0000:18:00.0 is known to the driver but not visible in sysfs"} {
				if !strings.Contains(out, want) {
					t.Errorf("check lacks %q:\n%s", want, out)
				}
			}
			if code != ExitFailed {
				t.Errorf("exit %d, want 1: %s", code, errs)
			}
		})
	}
}
