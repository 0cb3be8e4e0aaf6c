package discover

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/NVIDIA/go-nvlib/pkg/pciids"

	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// TestEmbeddedPCIIDs: the embedded database is go-nvlib's, and the parser
// names every device of it as go-nvlib's own parser does.
func TestEmbeddedPCIIDs(t *testing.T) {
	if len(nvlibPCIIDs) < 1<<20 {
		t.Fatalf("go-nvlib's embedded pci.ids not found (%d bytes): did go-nvlib rename pciids.defaultPCIdb?", len(nvlibPCIIDs))
	}
	// go-nvlib reads a file; the file given takes precedence over the
	// analysing machine's.
	p := filepath.Join(t.TempDir(), "pci.ids")
	if err := os.WriteFile(p, nvlibPCIIDs, 0o644); err != nil {
		t.Fatal(err)
	}
	want := pciids.NewDB(pciids.WithFilePath(p))
	got := parsePCIIDs(string(nvlibPCIIDs))
	if len(got) < 10000 {
		t.Fatalf("parsed only %d devices", len(got))
	}
	for k, name := range got {
		v, d := uint16(k>>16), uint16(k)
		if w, err := want.GetDeviceName(v, d); err != nil || w != name {
			t.Errorf("%04x:%04x: parsed %q, go-nvlib %q (%v)", v, d, name, w, err)
		}
	}
	// And the other way round, for the devices gdrcheck cares about.
	for _, id := range [][2]uint16{{0x10de, 0x2335}, {0x10de, 0x2330}, {0x15b3, 0x1021}, {0x10de, 0x22a3}, {0x1000, 0xc030}} {
		w, err := want.GetDeviceName(id[0], id[1])
		if g, gerr := got.GetDeviceName(id[0], id[1]); err != nil || gerr != nil || g != w {
			t.Errorf("%04x:%04x: parsed %q (%v), go-nvlib %q (%v)", id[0], id[1], g, gerr, w, err)
		}
	}
}

func TestParsePCIIDs(t *testing.T) {
	n := parsePCIIDs("# comment\n10de  NVIDIA Corporation\n\t2335  H200\n\t\t10de 18be  H200 SXM\n\t2330  H100 SXM5 80GB \nC 03  Display controller\n\t02  3D controller\n15b3  Mellanox\r\n\t1021  CX-7\r\n")
	want := map[uint32]string{0x10de2335: "H200", 0x10de2330: "H100 SXM5 80GB", 0x15b31021: "CX-7"}
	if len(n) != len(want) {
		t.Errorf("parsed %v, want %v", n, want)
	}
	for k, w := range want {
		if n[k] != w {
			t.Errorf("%08x = %q, want %q", k, n[k], w)
		}
	}
	if _, err := n.GetDeviceName(0x10de, 0xffff); err == nil {
		t.Error("unknown device named")
	}
}

// oneGPU is a host with one H200 (10de:2335).
const oneGPU = "numa 0 0-7\nhostbridge pci0000:00 numa=0\n  0000:00:01.0 rootport\n    0000:01:00.0 gpu id=10de:2335\n"

// oneGPUTree builds oneGPU in memory, with a pci.ids at p when text is set.
func oneGPUTree(t *testing.T, p, text string) fstest.MapFS {
	t.Helper()
	spec, err := fakehost.Parse("one-gpu", strings.NewReader(oneGPU))
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := spec.FS()
	if err != nil {
		t.Fatal(err)
	}
	if text != "" {
		fsys[p] = &fstest.MapFile{Data: []byte(text)}
	}
	return fsys
}

func gpuName(t *testing.T, r machine.Root) string {
	t.Helper()
	h, err := Discover(context.Background(), WithRoot(r), WithoutGPUFacts())
	if err != nil {
		t.Fatal(err)
	}
	if len(h.GPUs) != 1 {
		t.Fatalf("%d GPUs", len(h.GPUs))
	}
	return h.GPUs[0].Name
}

func embeddedName(t *testing.T) string {
	t.Helper()
	n, err := parsePCIIDs(string(nvlibPCIIDs)).GetDeviceName(0x10de, 0x2335)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPCINamesComeFromTheRoot: device names come from the pci.ids inside
// the root, which a recording root notes so that snapshots carry it, or
// from the embedded copy.
func TestPCINamesComeFromTheRoot(t *testing.T) {
	if got, want := gpuName(t, machine.NewRootFS(oneGPUTree(t, "", ""), "bare")), embeddedName(t); got != want {
		t.Errorf("a root without pci.ids: GPU named %q, want the embedded %q", got, want)
	}
	for _, p := range pciIDsPaths() {
		t.Run(p, func(t *testing.T) {
			fsys := oneGPUTree(t, p, "10de  NVIDIA\n\t2335  Snapshot's own H200\n")
			rec := machine.NewRecorder()
			if got := gpuName(t, machine.NewRootFS(fsys, "snap").WithRecorder(rec)); got != "Snapshot's own H200" {
				t.Errorf("GPU named %q, want the root's pci.ids name", got)
			}
			if !slices.Contains(rec.Entries(), machine.Entry{Path: p, Read: true}) {
				t.Errorf("%s not recorded as read", p)
			}
		})
	}
}

// TestPCINamesIgnoreTheAnalystsFile gives this machine a pci.ids that
// names the GPU differently (a bind mount over /usr/share/misc in a private
// mount namespace), then replays roots: their names do not change.
func TestPCINamesIgnoreTheAnalystsFile(t *testing.T) {
	const analyst = "The analyst's own H200"
	if os.Getenv("GDRCHECK_TEST_PCIIDS_NAMESPACE") == "" {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("needs unshare(1) to give this machine a pci.ids of its own")
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "pci.ids"), []byte("10de  NVIDIA\n\t2335  "+analyst+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(unshare, "--user", "--map-root-user", "--mount", "sh", "-c", `mount --bind "$1" /usr/share/misc && shift && exec "$@"`,
			"sh", dir, exe, "-test.run=^TestPCINamesIgnoreTheAnalystsFile$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GDRCHECK_TEST_PCIIDS_NAMESPACE=1")
		out, err := cmd.CombinedOutput()
		if !strings.Contains(string(out), "=== RUN") {
			t.Skipf("no private mount namespace here (%v): %s", err, out)
		}
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("in the namespace: %v\n%s", err, out)
		}
		return
	}
	// The live root reads this machine's database: the setup works.
	if got, _ := loadPCINames(machine.NewRoot("/")).GetDeviceName(0x10de, 0x2335); got != analyst {
		t.Fatalf("this machine's pci.ids names 10de:2335 %q, want %q: the bind mount did not take", got, analyst)
	}
	if got, want := gpuName(t, machine.NewRootFS(oneGPUTree(t, "", ""), "bare")), embeddedName(t); got != want {
		t.Errorf("a root without pci.ids: GPU named %q, want the embedded %q", got, want)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, oneGPUTree(t, "usr/share/misc/pci.ids", "10de  NVIDIA\n\t2335  Snapshot's own H200\n")); err != nil {
		t.Fatal(err)
	}
	if got := gpuName(t, machine.NewRoot(dir)); got != "Snapshot's own H200" {
		t.Errorf("a snapshot directory with its own pci.ids: GPU named %q", got)
	}
}

// TestParsedPCIIDsByText: the parsed databases are kept by their text, so
// a root with a database of its own never gets another's names, however
// many texts come and go.
func TestParsedPCIIDsByText(t *testing.T) {
	names := func(i int) string { return fmt.Sprintf("10de  NVIDIA\n\t2335  H200 of database %d\n", i) }
	for round := range 3 {
		for i := range maxPCIIDsParsed + 2 {
			got, err := parsedPCIIDs(names(i)).GetDeviceName(0x10de, 0x2335)
			if want := fmt.Sprintf("H200 of database %d", i); err != nil || got != want {
				t.Fatalf("round %d, database %d: named %q (%v), want %q", round, i, got, err, want)
			}
		}
	}
	if a, b := parsedPCIIDs(names(0)), parsedPCIIDs(names(0)); fmt.Sprintf("%p", a) != fmt.Sprintf("%p", b) {
		t.Error("the same text was parsed twice")
	}
	if got, want := embeddedName(t), ""; got == want {
		t.Error("the embedded database names no H200")
	}
	if got, err := parsedPCIIDs(embeddedPCIIDs()).GetDeviceName(0x10de, 0x2335); err != nil || got != embeddedName(t) {
		t.Errorf("the embedded database through the cache: %q (%v), want %q", got, err, embeddedName(t))
	}
}

// BenchmarkLoadPCINames: what naming devices cost a discovery. parse is
// one parse of go-nvlib's embedded pci.ids (every command paid it, and
// every test of a command); load is loadPCINames on a root without a
// database of its own, the embedded copy parsed once per process.
func BenchmarkLoadPCINames(b *testing.B) {
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			parsePCIIDs(string(nvlibPCIIDs))
		}
	})
	root := machine.NewRootFS(fstest.MapFS{}, "bare")
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			loadPCINames(root)
		}
	})
}
