package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// hgxDir materialises the HGX H200 host as a directory for a test to
// damage; gpu0 is GPU0's sysfs directory in it.
func hgxDir(t *testing.T) (root, gpu0 string) {
	t.Helper()
	root = fakehost.Dir(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	gpu0, err := filepath.EvalSymlinks(filepath.Join(root, "sys/bus/pci/devices/0000:18:00.0"))
	if err != nil {
		t.Fatal(err)
	}
	return root, gpu0
}

// TestUnidentifiedGPUFailsCheck: a GPU whose vendor is garbage, missing,
// a directory or a link loop used to vanish from the topology while
// check exited 0 (review D8, rows 36, 43, 44, 47). Now node.discovery
// names the device and gpu.present the GPU the driver still reports.
func TestUnidentifiedGPUFailsCheck(t *testing.T) {
	t.Parallel()
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
			root, dev := hgxDir(t)
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

// TestUnreadableAttributesSayWhy holds review D22's messages: an
// unreadable port state is not "port 1 is /LinkUp", ports/ that cannot be
// listed is not "lists no ports", a garbage link width is not "no PCIe
// link", and sys/class/infiniband/self -> . is not a NIC.
func TestUnreadableAttributesSayWhy(t *testing.T) {
	t.Parallel()
	loop := func(p string) error {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		return os.Symlink(filepath.Base(p), p)
	}
	for _, c := range []struct {
		name   string
		damage func(root, gpu0 string) error
		only   string
		want   []string
		reject []string
	}{
		{"port state a link loop", func(root, _ string) error {
			return loop(filepath.Join(root, "sys/class/infiniband/mlx5_3/ports/1/state"))
		}, "nic.port", []string{"StateUnknown", "mlx5_3 port 1: the port state could not be read", "too many levels of symbolic links"}, []string{" is /LinkUp"}},
		{"port state empty", func(root, _ string) error {
			return os.WriteFile(filepath.Join(root, "sys/class/infiniband/mlx5_3/ports/1/state"), nil, 0o644)
		}, "nic.port", []string{"StateUnknown", "(empty or missing)"}, []string{" is /LinkUp"}},
		{"ports a link loop", func(root, _ string) error {
			return loop(filepath.Join(root, "sys/class/infiniband/mlx5_3/ports"))
		}, "nic.port", []string{"PortsUnreadable", "the ports of mlx5_3 could not be listed"}, []string{"lists no ports"}},
		{"negative link width", func(_, gpu0 string) error {
			return os.WriteFile(filepath.Join(gpu0, "max_link_width"), []byte("-16\n"), 0o644)
		}, "pcie.link", []string{"LinkUnreadable", "GPU0 0000:18:00.0: the PCIe link could not be read"}, []string{"reports no PCIe link"}},
		{"garbage link width", func(_, gpu0 string) error {
			return os.WriteFile(filepath.Join(gpu0, "max_link_width"), []byte("sixteen\n"), 0o644)
		}, "pcie.link", []string{"LinkUnreadable"}, []string{"reports no PCIe link"}},
		{"infiniband/self -> .", func(root, _ string) error {
			return os.Symlink(".", filepath.Join(root, "sys/class/infiniband/self"))
		}, "nic.port,node.discovery", []string{"sys/class/infiniband/self", "not an RDMA device's directory"}, []string{"self:1", "self lists no ports"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, gpu0 := hgxDir(t)
			if err := c.damage(root, gpu0); err != nil {
				t.Fatal(err)
			}
			out, errs, _ := run(t, "check", "--root", root, "--only", c.only)
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("check lacks %q (%s):\n%s", want, errs, out)
				}
			}
			for _, bad := range c.reject {
				if strings.Contains(out, bad) {
					t.Errorf("check says %q:\n%s", bad, out)
				}
			}
		})
	}
}
