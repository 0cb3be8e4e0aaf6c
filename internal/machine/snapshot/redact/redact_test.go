package redact_test

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot/redact"
)

var key = []byte("a fixed key for the tests only..")

func file(r *redact.Redactor, rel, s string) string { return string(r.File(rel, []byte(s))) }

// find returns the first submatch of pattern in s.
func find(t *testing.T, s, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in %q", pattern, s)
	}
	return m[1]
}

// TestSameValueSamePseudonym: one identifier gets one pseudonym in every
// file and spelling, so pairing and NVML-to-sysfs matching survive.
func TestSameValueSamePseudonym(t *testing.T) {
	r := redact.NewWithKey(key, "node17.cluster.example")
	const uuid, serial = "GPU-3bc6dcad-d8ba-24b2-eea8-bd103cbfe5a4", "1654024075980"
	nvmlJSON := file(r, "commands/nvml.json", `{"uuid": "`+uuid+`", "serial": "`+serial+`"}`)
	smi := file(r, "commands/nvidia-smi-q-x.xml", "<serial>"+serial+"</serial>\n<uuid>"+uuid+"</uuid>\n")
	info := file(r, "proc/driver/nvidia/gpus/0000:18:00.0/information", "GPU UUID: \t "+strings.ToUpper(uuid[4:])+"\n")
	env := file(r, "commands/environ.txt", "CUDA_VISIBLE_DEVICES="+uuid+"\n")
	u1, u2 := find(t, nvmlJSON, `"uuid": "(GPU-[^"]+)"`), find(t, smi, `<uuid>(.*)</uuid>`)
	u3, u4 := find(t, info, `GPU UUID: \t (\S+)`), find(t, env, `=(\S+)`)
	if u1 == uuid || u1 != u2 || u1 != u4 || u3 != strings.ToUpper(u1[4:]) {
		t.Errorf("UUID pseudonyms: %s %s %s %s", u1, u2, u3, u4)
	}
	s1, s2 := find(t, nvmlJSON, `"serial": "(\d+)"`), find(t, smi, `<serial>(\d+)</serial>`)
	if s1 == serial || s1 != s2 || len(s1) != len(serial) {
		t.Errorf("serial pseudonyms: %s %s", s1, s2)
	}

	// A ConnectX port: its GUID in node_guid, in the InfiniBand GID, in
	// the IPoIB hardware address and in ibv_devinfo.
	const guid = "0c42:a103:0016:054c"
	g1 := strings.TrimSpace(file(r, "sys/class/infiniband/mlx5_0/node_guid", guid+"\n"))
	gid := file(r, "sys/class/infiniband/mlx5_0/ports/1/gids/0", "fe80:0000:0000:0000:"+guid+"\n")
	ipoib := file(r, "sys/class/net/ib0/address", "00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:16:05:4c\n")
	devinfo := file(r, "commands/ibv_devinfo-v.txt", "\tnode_guid:\t\t\t"+guid+"\n\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:"+guid+"\n")
	if g1 == guid || gid != "fe80:0000:0000:0000:"+g1+"\n" {
		t.Errorf("GUID %s, GID %s", g1, gid)
	}
	hw := strings.ReplaceAll(g1, ":", "")
	wantIPoIB := "00:00:10:87:fe:80:00:00:00:00:00:00:" + hw[0:2] + ":" + hw[2:4] + ":" + hw[4:6] + ":" + hw[6:8] + ":" + hw[8:10] + ":" + hw[10:12] + ":" + hw[12:14] + ":" + hw[14:16] + "\n"
	if ipoib != wantIPoIB {
		t.Errorf("IPoIB address %q, want %q", ipoib, wantIPoIB)
	}
	if find(t, devinfo, `node_guid:\s+(\S+)`) != g1 || find(t, devinfo, `GID\[  0\]:\s+(\S+)`) != "fe80:0000:0000:0000:"+g1 {
		t.Errorf("ibv_devinfo: %q", devinfo)
	}

	// A RoCE port: the MAC, and the GID made from it (EUI-64).
	mac := strings.TrimSpace(file(r, "sys/class/net/eth2/address", "0c:42:a1:16:05:4c\n"))
	roce := strings.TrimSpace(file(r, "sys/class/infiniband/mlx5_2/ports/1/gids/0", "fe80:0000:0000:0000:0e42:a1ff:fe16:054c"))
	m := regexp.MustCompile(`^([0-9a-f]{2}):([0-9a-f]{2}):([0-9a-f]{2}):([0-9a-f]{2}):([0-9a-f]{2}):([0-9a-f]{2})$`).FindStringSubmatch(mac)
	if m == nil || mac == "0c:42:a1:16:05:4c" {
		t.Fatalf("MAC %q", mac)
	}
	var b0 byte
	for _, c := range m[1] {
		b0 = b0<<4 | byte(strings.IndexRune("0123456789abcdef", c))
	}
	if b0&1 != 0 || b0&2 == 0 {
		t.Errorf("MAC %s is not a locally administered unicast address", mac)
	}
	wantRoCE := "fe80:0000:0000:0000:" + strings.ToLower(string("0123456789abcdef"[(b0^2)>>4])+string("0123456789abcdef"[(b0^2)&15])) + m[2] + ":" + m[3] + "ff:fe" + m[4] + ":" + m[5] + m[6]
	if roce != wantRoCE {
		t.Errorf("RoCE GID %s, want %s (from MAC %s)", roce, wantRoCE, mac)
	}

	// RoCE v2 over IPv4: the mapped address is the address's pseudonym.
	ip := file(r, "commands/environ.txt", "MASTER_ADDR=192.168.7.21\n")
	v2 := file(r, "sys/class/infiniband/mlx5_2/ports/1/gids/3", "0000:0000:0000:0000:0000:ffff:c0a8:0715")
	a := find(t, ip, `=10\.(\d+\.\d+\.\d+)`)
	var oct [3]int
	for i, p := range strings.Split(a, ".") {
		for _, c := range p {
			oct[i] = oct[i]*10 + int(c-'0')
		}
	}
	if want := "0000:0000:0000:0000:0000:ffff:0a" + hex2(oct[0]) + ":" + hex2(oct[1]) + hex2(oct[2]); v2 != want {
		t.Errorf("IPv4-mapped GID %s, want %s (from %s)", v2, want, ip)
	}

	// Host names, as words only.
	h := strings.TrimSpace(file(r, "proc/sys/kernel/hostname", "node17.cluster.example\n"))
	desc := file(r, "sys/class/infiniband/mlx5_0/node_desc", "node17 mlx5_0\n")
	envh := file(r, "commands/environ.txt", "MASTER_ADDR=node17.cluster.example\nNCCL_SOCKET_IFNAME=node17x\n")
	if !strings.HasPrefix(h, "host-") || find(t, envh, `MASTER_ADDR=(\S+)`) != h {
		t.Errorf("host %q, environ %q", h, envh)
	}
	if strings.Contains(desc, "node17 ") || !strings.HasSuffix(desc, " mlx5_0\n") || !strings.Contains(envh, "node17x") {
		t.Errorf("node_desc %q, environ %q", desc, envh)
	}
}

func hex2(n int) string { return string("0123456789abcdef"[n>>4]) + string("0123456789abcdef"[n&15]) }

// TestKeyedPerSnapshot: two redactors (two snapshots) share no pseudonym.
func TestKeyedPerSnapshot(t *testing.T) {
	in := `{"uuid": "GPU-3bc6dcad-d8ba-24b2-eea8-bd103cbfe5a4", "serial": "1654024075980"}`
	a, b := redact.New().File("commands/nvml.json", []byte(in)), redact.New().File("commands/nvml.json", []byte(in))
	if bytes.Equal(a, b) || string(a) == in {
		t.Errorf("two snapshots: %s and %s", a, b)
	}
}

// TestKeepsWhatIdentifiesNothing: placeholders, zeros, loopback, version
// numbers and PCI addresses are left as they are.
func TestKeepsWhatIdentifiesNothing(t *testing.T) {
	r := redact.NewWithKey(key, "vm")
	for _, c := range []struct{ rel, in string }{
		{"commands/nvidia-smi-q-x.xml", "<serial>N/A</serial><serial>0000000000000</serial><uuid>GPU-00000000-0000-0000-0000-000000000000</uuid>"},
		{"sys/class/net/lo/address", "00:00:00:00:00:00\n"},
		{"sys/class/net/eth0/broadcast", "ff:ff:ff:ff:ff:ff\n"},
		{"commands/environ.txt", "MASTER_ADDR=127.0.0.1\nNCCL_VERSION=2.28.3-1\n"},
		{"commands/nvml.json", `"nvml_version": "13.580.159.04", "bus_id": "0000:00:06.0", "driver_version": "580.159.04"`},
		{"proc/driver/nvidia/gpus/0000:00:06.0/information", "Video BIOS: \t 96.00.a5.00.1a\nBus Location: \t 0000:00:06.0\n"},
		{"proc/cpuinfo", "flags\t\t: fpu vme kvm vmx\n"},
		{"sys/module/vsock/version", "1.0.2.0\n"},
		{"commands/ibv_devinfo-v.txt", "\tfw_ver:\t\t\t1.14.50.0-rc1\n"},
		{"sys/class/infiniband/mlx5_0/ports/1/gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n"},
	} {
		if got := file(r, c.rel, c.in); got != c.in {
			t.Errorf("%s: %q became %q", c.rel, c.in, got)
		}
	}
}

// configWithDSN is PCI config space with a null extended capability at
// 0x100, a DSN at 0x140 and another capability after it.
func configWithDSN() []byte {
	b := make([]byte, 4096)
	for i := range 0x40 {
		b[i] = byte(i + 1)
	}
	binary.LittleEndian.PutUint32(b[0x100:], 0x140<<20)         // null capability, next 0x140
	binary.LittleEndian.PutUint32(b[0x140:], 0x180<<20|1<<16|3) // DSN, next 0x180
	binary.LittleEndian.PutUint64(b[0x144:], 0xc477de65d32db048)
	binary.LittleEndian.PutUint32(b[0x180:], 1<<16|0x0b) // vendor-specific, last
	binary.LittleEndian.PutUint64(b[0x184:], 0x1122334455667788)
	return b
}

// TestZeroesTheDeviceSerialNumber: only the 8 serial bytes of the DSN
// capability change, and the input is not modified.
func TestZeroesTheDeviceSerialNumber(t *testing.T) {
	in := configWithDSN()
	orig := bytes.Clone(in)
	out := redact.NewWithKey(key).File("sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0/config", in)
	if !bytes.Equal(in, orig) {
		t.Fatal("the input was modified")
	}
	want := bytes.Clone(orig)
	clear(want[0x144:0x14c])
	if !bytes.Equal(out, want) {
		t.Errorf("config space: %x", out[0x100:0x190])
	}
	// Short or loop-shaped config space is returned as it is.
	short := orig[:256]
	if got := redact.NewWithKey(key).File("sys/devices/x/config", short); !bytes.Equal(got, short) {
		t.Error("256-byte config space changed")
	}
	loop := make([]byte, 4096)
	binary.LittleEndian.PutUint32(loop[0x100:], 0x100<<20|1<<16|0x0b)
	if got := redact.NewWithKey(key).File("sys/devices/x/config", loop); !bytes.Equal(got, loop) {
		t.Error("a capability list that loops changed")
	}
	sn := redact.NewWithKey(key).File("sys/devices/x/serial_number", []byte("c4-77-de-65-d3-2d-b0-48\n"))
	if string(sn) != "00-00-00-00-00-00-00-00\n" {
		t.Errorf("serial_number %q", sn)
	}
}

// redactKeyless zeroes a config space's DSN (the key plays no part).
func redactKeyless(rel string, b []byte) []byte { return redact.NewWithKey(key).File(rel, b) }

// FuzzFile: a snapshot is untrusted input; redacting any file of it never
// panics, keeps config space's length, and gives the same output for the
// same input under one key.
func FuzzFile(f *testing.F) {
	f.Add("sys/devices/x/config", configWithDSN())
	f.Add("commands/ibv_devinfo-v.txt", []byte("node_guid: 0c42:a103:0016:054c\nGID[0]: fe80:0000:0000:0000:0e42:a1ff:fe16:054c\n"))
	f.Add("sys/class/net/ib0/address", []byte("00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:16:05:4c"))
	f.Add("commands/environ.txt", []byte("MASTER_ADDR=node17\nCUDA_VISIBLE_DEVICES=GPU-3bc6dcad-d8ba-24b2-eea8-bd103cbfe5a4,10.0.0.1\n"))
	f.Add("commands/nvml.json", []byte(`{"serial": "1654024075980", "uuid": "MIG-3bc6dcad-d8ba-24b2-eea8-bd103cbfe5a4"}`))
	r := redact.NewWithKey(key, "node17.example")
	f.Fuzz(func(t *testing.T, rel string, b []byte) {
		in := bytes.Clone(b)
		out := r.File(rel, b)
		if !bytes.Equal(in, b) {
			t.Fatal("the input was modified")
		}
		if strings.HasSuffix(rel, "/config") && strings.HasPrefix(rel, "sys/") && len(out) != len(b) {
			t.Fatalf("config space of %d bytes became %d", len(b), len(out))
		}
		if again := r.File(rel, b); !bytes.Equal(again, out) {
			t.Fatal("two outputs for one input")
		}
	})
}
