package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"testing/fstest"
)

// TestIndexedFS: the index answers as a file system must (fstest.TestFS
// walks it, opens and lists everything), lists the parents a map leaves
// out, and says a missing name does not exist without scanning.
func TestIndexedFS(t *testing.T) {
	m := fstest.MapFS{
		"sys/bus/pci/devices/0000-00-01.0/vendor": {Data: []byte("0x10de\n")},
		"sys/bus/pci/devices/0000-00-02.0/vendor": {Data: []byte("0x15b3\n")},
		"proc/cmdline": {Data: []byte("ro\n")},
	}
	for i := range 2000 {
		m[fmt.Sprintf("sys/class/net/eth%d/mtu", i)] = &fstest.MapFile{Data: []byte("1500\n")}
	}
	x := Indexed(m)
	if err := fstest.TestFS(x, "proc/cmdline", "sys/bus/pci/devices/0000-00-01.0/vendor", "sys/class/net/eth1999/mtu"); err != nil {
		t.Fatal(err)
	}
	ents, err := fs.ReadDir(x, "sys/class/net")
	if err != nil || len(ents) != 2000 || ents[0].Name() != "eth0" || !ents[0].IsDir() {
		t.Fatalf("ReadDir: %d entries, %v", len(ents), err)
	}
	if _, err := fs.Stat(x, "sys/class/net/eth7/address"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing attribute: %v", err)
	}
	if _, err := fs.ReadDir(x, "proc/cmdline"); err == nil {
		t.Error("a file listed as a directory")
	}
}
