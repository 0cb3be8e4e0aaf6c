package counters

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Why a NIC's temperature or a port's module has no reading.
const (
	// NoHwmon: the NIC's PCI function has no hwmon directory. mlx5
	// registers one on recent kernels (drivers/net/ethernet/mellanox/mlx5/
	// core/hwmon.c; about Linux 6.6 — the release was not checked), where
	// the firmware offers the MTMP register.
	NoHwmon = cf.NotExposed + ": no hwmon device on the NIC's PCI function (mlx5 registers one on recent kernels, about 6.6, where the firmware has the MTMP register)"
	// NoPCIFunction: the RDMA device has no PCI function (a software device).
	NoPCIFunction = "no PCI function (a software RDMA device)"
	// NoNetdev: the port has no network interface, so ethtool has nothing
	// to ask (InfiniBand without IPoIB); the module is read on such
	// ports by the NIC vendor's tools (mlxlink -m) or from the switch.
	NoNetdev = "no network interface on the port (InfiniBand without IPoIB): ethtool -m needs one"
)

var (
	tempInput = regexp.MustCompile(`^temp(\d+)_input$`)
	safeName  = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,15}$`)
)

// ReadNICs reads every RDMA NIC's hwmon temperatures and, per port, its
// module's diagnostics through root: the files under the NIC's PCI
// function, and `ethtool -m NETDEV` through the command door (run live
// under its deadline and ctx, read from a snapshot's commands/). now stamps
// each NIC's reading (time.Now when nil). It never fails: what could not
// be read says why.
//
// The modules are read at once, one ethtool per port (each module sits on
// its own two-wire bus), and within half the time ctx has left: a module
// that does not answer is missing with the command's error and leaves the
// rest of the sample its time, so a hung module cannot cost a burn-in its
// sample.
func ReadNICs(ctx context.Context, root machine.Root, h *topology.Host, now func() time.Time) []cf.NIC {
	if now == nil {
		now = time.Now
	}
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
		defer cancel()
	}
	out := make([]cf.NIC, len(h.NICs))
	var wg sync.WaitGroup
	for i, n := range h.NICs {
		out[i] = cf.NIC{Device: n.Name, ReadAt: now(), Modules: make([]cf.Module, len(n.Ports))}
		for j, p := range n.Ports {
			wg.Go(func() { out[i].Modules[j] = readModule(ctx, root, p) })
		}
		if n.Dev == nil {
			out[i].SensorsMissing = NoPCIFunction
		} else {
			out[i].Sensors, out[i].SensorsMissing = readHwmon(root, n.Dev.SysPath+"/hwmon")
		}
	}
	wg.Wait()
	for i := range out {
		out[i].ReadDone = now()
	}
	return out
}

// readHwmon reads every temperature channel of every hwmon device under
// dir (a PCI function's hwmon/).
func readHwmon(root machine.Root, dir string) ([]cf.TempSensor, string) {
	ents, err := root.ReadDir(dir)
	if err != nil {
		if why(err) == cf.NotExposed {
			return nil, NoHwmon
		}
		return nil, err.Error()
	}
	var out []cf.TempSensor
	for _, e := range ents {
		hw := e.Name()
		if !strings.HasPrefix(hw, "hwmon") {
			continue
		}
		files, err := root.Names(dir + "/" + hw)
		if err != nil {
			return out, err.Error()
		}
		var chans []int
		for _, f := range files {
			if m := tempInput.FindStringSubmatch(f); m != nil {
				c, _ := strconv.Atoi(m[1])
				chans = append(chans, c)
			}
		}
		slices.Sort(chans)
		for _, c := range chans {
			out = append(out, readTemp(root, dir+"/"+hw, hw, c, files))
		}
	}
	if len(out) == 0 {
		return nil, cf.NotExposed + ": no temperature channel under " + root.Display(dir)
	}
	return out, ""
}

// readTemp reads one channel: tempN_input, _highest, _crit (millidegrees
// Celsius) and _label.
func readTemp(root machine.Root, dir, hw string, c int, files []string) cf.TempSensor {
	s := cf.TempSensor{Name: fmt.Sprintf("%s/temp%d", hw, c)}
	miss := func(f, why string) {
		if s.Missing == nil {
			s.Missing = map[string]string{}
		}
		s.Missing[f] = why
	}
	for _, x := range []struct {
		suffix string
		dst    **float64
	}{{"input", &s.TempC}, {"highest", &s.HighestC}, {"crit", &s.CritC}} {
		f := fmt.Sprintf("temp%d_%s", c, x.suffix)
		if !slices.Contains(files, f) {
			miss(f, cf.NotExposed)
			continue
		}
		b, err := root.ReadFileLimit(dir+"/"+f, maxFile)
		if err != nil {
			miss(f, why(err))
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			miss(f, fmt.Sprintf("%s: want millidegrees Celsius, got %q", root.Display(dir+"/"+f), strings.TrimSpace(string(b))))
			continue
		}
		t := float64(v) / 1000
		*x.dst = &t
	}
	if f := fmt.Sprintf("temp%d_label", c); slices.Contains(files, f) {
		if b, err := root.ReadFileLimit(dir+"/"+f, maxFile); err == nil {
			s.Label = strings.TrimSpace(string(b))
		}
	}
	return s
}

// readModule reads one port's module through ethtool -m on the port's
// network interface.
func readModule(ctx context.Context, root machine.Root, p topology.Port) cf.Module {
	// Discovery gives the port its interface: the RoCE GID's, else the
	// function's only one (IPoIB).
	m := cf.Module{Port: p.Number, Netdev: p.NetDev}
	if m.Netdev == "" {
		m.Missing = NoNetdev
		return m
	}
	if !safeName.MatchString(m.Netdev) {
		m.Missing = fmt.Sprintf("interface name %q is not one to put on a command line", m.Netdev)
		return m
	}
	cmd := machine.CmdEthtoolModule(m.Netdev)
	b, err := root.Run(ctx, cmd)
	if err != nil {
		m.Missing = err.Error()
		return m
	}
	d, err := cf.ParseEthtoolModule(root.Display(machine.CommandsDir+"/"+cmd.Key), string(b))
	if err != nil {
		m.Missing = err.Error()
		return m
	}
	if !d.Monitored() {
		m.Missing = "the module prints no diagnostics (a passive copper cable, or DDM not implemented): " + d.Identifier
	}
	m.DDM = d
	return m
}
