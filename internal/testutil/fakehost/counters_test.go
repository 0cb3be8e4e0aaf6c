package fakehost

import (
	"strings"
	"testing"
)

// TestCounterDirectives: the AER and hw_counters directives write the files
// the kernel would, and refuse what it would not have.
func TestCounterDirectives(t *testing.T) {
	const host = `hostbridge pci0000:15
  0000:15:01.0 rootport aer.cor.RxErr=2 aer.cor.BadTLP=1 aer.fatal.DLP=1
    0000:16:00.0 nic
rdma mlx5_0 0000:16:00.0 layer=Ethernet hw.out_of_sequence=3 port_rcv_data=9
`
	s, err := Parse("h", strings.NewReader(host))
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := s.FS()
	if err != nil {
		t.Fatal(err)
	}
	dev := "sys/devices/pci0000:15/0000:15:01.0/"
	port := dev + "0000:16:00.0/infiniband/mlx5_0/ports/1/"
	want := map[string]string{
		dev + "aer_dev_correctable":          "RxErr 2\nBadTLP 1\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 3\n",
		port + "hw_counters/out_of_sequence": "3\n",
		port + "hw_counters/np_cnp_sent":     "0\n",
		port + "counters/port_rcv_data":      "9\n",
	}
	for p, w := range want {
		f, ok := fsys[p]
		if !ok || string(f.Data) != w {
			t.Errorf("%s = %q (present %v), want %q", p, f.Data, ok, w)
		}
	}
	if f := fsys[dev+"aer_dev_fatal"]; f == nil || !strings.Contains(string(f.Data), "DLP 1\n") || !strings.HasSuffix(string(f.Data), "TOTAL_ERR_FATAL 1\n") {
		t.Errorf("aer_dev_fatal: %v", f)
	}
	if _, ok := fsys[dev+"0000:16:00.0/aer_dev_fatal"]; ok {
		t.Error("a device without aer attributes has no AER files")
	}
	bad := map[string]string{
		"  0000:15:01.0 rootport aer.cor.Bogus=1": "aer.cor.Bogus: no such field in aer_dev_correctable",
		"  0000:15:01.0 rootport aer=no":          `aer="no": want aer=yes`,
		"  0000:15:01.0 rootport aer.fatal.DLP=x": `aer.fatal.DLP="x"`,
		"rdma mlx5_0 hw=maybe":                    `hw="maybe": want hw=yes`,
		"rdma mlx5_0 hw.out_of_sequence=-1":       "counter hw.out_of_sequence",
	}
	for line, w := range bad {
		in := "hostbridge pci0000:15\n" + line + "\n"
		if _, err := Parse("h", strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%q: err = %v, want %q", line, err, w)
		}
	}
}
