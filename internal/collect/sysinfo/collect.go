// Package sysinfo reads the node facts (their types and parsers are in
// facts/node) through a machine.Root, so a recording root captures exactly
// what it read into a snapshot and a snapshot root replays it; and it holds
// the transform a snapshot's files go through before they are shared.
package sysinfo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// DefaultTimeout bounds each fact's reads and commands.
const DefaultTimeout = 10 * time.Second

// Options for Collect.
type Options struct {
	// Timeout bounds each fact's reads and commands (default
	// DefaultTimeout). A fact whose reads overrun it carries the error.
	Timeout time.Duration
}

// Collect reads the node facts of h's host through r: live on "/", from
// what a snapshot captured otherwise. It reads only what the checks judge
// for this host (IOMMU group types of its GPUs and RDMA NICs; rdma-core and
// mlx5_core versions only when it has RDMA NICs; the kernel log and fabric
// manager only when it has GPUs). Library versions are not probed here
// (that needs cgo, see internal/collect/libs); on a snapshot they are read
// from snapshot.LibrariesFile.
func Collect(ctx context.Context, r machine.Root, h *topology.Host, o Options) *node.Facts {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	f := &node.Facts{Paths: pathsOf(r), Live: r.Live()}
	c := collector{ctx: ctx, r: r, timeout: o.Timeout}
	var wg sync.WaitGroup
	text := func(dst *node.Text, source string, read func(context.Context) node.Text) {
		fact(&c, &wg, dst, read, func(err error) node.Text { return node.Text{Source: source, Err: err} })
	}
	c.registration(&wg, f)
	text(&f.Cmdline, r.Display("proc/cmdline"), c.file("proc/cmdline"))
	fact(&c, &wg, &f.IOMMU, func(context.Context) node.IOMMU { return c.iommu(h) }, func(err error) node.IOMMU {
		return node.IOMMU{Units: node.Listing{Source: r.Display("sys/class/iommu"), Err: err}}
	})
	fact(&c, &wg, &f.Memlock, c.memlock, func(err error) node.Memlock { return node.Memlock{Err: err} })
	fact(&c, &wg, &f.NetInterfaces, c.listing("sys/class/net"), func(err error) node.Listing {
		return node.Listing{Source: r.Display("sys/class/net"), Err: err}
	})
	// The job environment: live, this process's; on a snapshot, what it
	// captured (a small file of the snapshot itself).
	f.Environ = c.environ()
	if len(h.GPUs) > 0 {
		fact(&c, &wg, &f.KernelLog, c.kernelLog, func(err error) node.KernelLog { return node.KernelLog{Source: "dmesg", Err: err} })
		text(&f.FabricManager, fabricSource, c.fabricManager)
		text(&f.FabricManagerVersion, machine.CmdFabricManagerVersion.String(), c.command(machine.CmdFabricManagerVersion))
		text(&f.FabricManagerLog, machine.CmdFabricManagerLog.String(), c.command(machine.CmdFabricManagerLog))
		if multiNodeNVLink(h) {
			text(&f.IMEX.Service, machine.CmdIMEX.String(), c.command(machine.CmdIMEX))
			text(&f.IMEX.Status, machine.CmdIMEXCtl.String(), c.command(machine.CmdIMEXCtl))
			fact(&c, &wg, &f.IMEX.Channels, c.listing(imexChannels), func(err error) node.Listing {
				return node.Listing{Source: r.Display(imexChannels), Err: err}
			})
		}
	}
	if len(h.NICs) > 0 {
		fact(&c, &wg, &f.RDMACore, c.rdmaCore, func(error) node.RDMACore { return node.RDMACore{} })
		text(&f.MLX5Core, r.Display(mlx5File), c.file(mlx5File))
	}
	if v := f.Environ.Vars["NCCL_TOPO_FILE"]; v != "" && f.Live {
		fact(&c, &wg, &f.TopoFile, func(context.Context) node.TopoFile { return c.topoFile(v) }, func(err error) node.TopoFile {
			return node.TopoFile{Checked: true, Err: err}
		})
	}
	if !f.Live {
		fact(&c, &wg, &f.Libraries, c.libraries, func(error) *node.Libraries { return nil })
		fact(&c, &wg, &f.CapturedAt, c.capturedAt, func(error) time.Time { return time.Time{} })
	}
	wg.Wait()
	return f
}

// CollectRegistration reads only the facts that say whether GPU memory
// can be registered with a NIC (the loaded modules and the NVIDIA kernel
// driver), for a view that shows GPU Direct RDMA without judging the node
// (gdrcheck topo). They are a subset of Collect's, so a snapshot holds them.
func CollectRegistration(ctx context.Context, r machine.Root, o Options) *node.Facts {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	f := &node.Facts{Paths: pathsOf(r), Live: r.Live()}
	c := collector{ctx: ctx, r: r, timeout: o.Timeout}
	var wg sync.WaitGroup
	c.registration(&wg, f)
	wg.Wait()
	return f
}

// registration starts the reads of the modules and the NVIDIA driver.
func (c *collector) registration(wg *sync.WaitGroup, f *node.Facts) {
	fact(c, wg, &f.Modules, c.modules, func(err error) node.Modules {
		return node.Modules{Source: c.r.Display("proc/modules"), Err: err}
	})
	fact(c, wg, &f.Driver, c.driver, func(err error) node.Driver {
		return node.Driver{Source: c.r.Display(driverFile), Err: err}
	})
}

const (
	driverFile   = "proc/driver/nvidia/version"
	mlx5File     = "sys/module/mlx5_core/version"
	fabricSource = "systemctl is-active nvidia-fabricmanager"
)

// pathsOf takes the display form from the door itself: Display of any
// path is a prefix followed by the cleaned path.
func pathsOf(r machine.Root) node.Paths {
	return node.Paths{Prefix: strings.TrimSuffix(r.Display("x"), "x")}
}

type collector struct {
	ctx     context.Context
	r       machine.Root
	timeout time.Duration
}

// fact fills *dst with read's value, or failed's when read overruns the
// collector's deadline (the read is then abandoned; its late value is
// dropped).
func fact[T any](c *collector, wg *sync.WaitGroup, dst *T, read func(context.Context) T, failed func(error) T) {
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
		defer cancel()
		done := make(chan T, 1)
		go func() { done <- read(ctx) }()
		select {
		case v := <-done:
			*dst = v
		case <-ctx.Done():
			*dst = failed(fmt.Errorf("no answer within %s: %w", c.timeout, ctx.Err()))
		}
	})
}

func (c *collector) file(rel string) func(context.Context) node.Text {
	return func(context.Context) node.Text {
		s, err := c.r.ReadString(rel)
		return node.Text{Source: c.r.Display(rel), Value: s, Err: err}
	}
}

func (c *collector) listing(rel string) func(context.Context) node.Listing {
	return func(context.Context) node.Listing {
		names, err := c.r.Names(rel)
		return node.Listing{Source: c.r.Display(rel), Names: names, Err: err}
	}
}

func (c *collector) modules(context.Context) node.Modules {
	m := node.Modules{Source: c.r.Display("proc/modules"), BuiltIn: map[string]bool{}}
	b, err := c.r.ReadFile("proc/modules")
	m.Loaded, m.Err = node.ParseModules(b), err
	for _, name := range node.ModulesOfInterest {
		if !m.Loaded[name] && c.r.Exists("sys/module/"+name) {
			m.BuiltIn[name] = true
		}
	}
	return m
}

func (c *collector) driver(context.Context) node.Driver {
	s, err := c.r.ReadString(driverFile)
	if err != nil {
		return node.Driver{Source: c.r.Display(driverFile), Err: err}
	}
	return node.ParseDriver(c.r.Display(driverFile), s)
}

// iommu lists the IOMMU units and reads the group type of every GPU and
// RDMA NIC that is in a group.
func (c *collector) iommu(h *topology.Host) node.IOMMU {
	out := node.IOMMU{Units: c.listing("sys/class/iommu")(c.ctx), Groups: map[int]node.Text{}}
	var devs []*topology.Device
	for _, g := range h.GPUs {
		devs = append(devs, g.Dev)
	}
	for _, n := range h.MatrixNICs() {
		devs = append(devs, n.Dev)
	}
	for _, d := range devs {
		if d == nil || d.IOMMUGroup == nil {
			continue
		}
		if _, ok := out.Groups[*d.IOMMUGroup]; !ok {
			out.Groups[*d.IOMMUGroup] = c.file(fmt.Sprintf("sys/kernel/iommu_groups/%d/type", *d.IOMMUGroup))(c.ctx)
		}
	}
	return out
}

// memlock reads /proc/self/limits, or runs `ulimit -a` where that has no
// locked-memory line.
func (c *collector) memlock(ctx context.Context) node.Memlock {
	if s, err := c.r.ReadString("proc/self/limits"); err == nil {
		if m, ok := node.ParseLimits(c.r.Display("proc/self/limits"), s); ok {
			return m
		}
	}
	b, err := c.r.Run(ctx, machine.CmdUlimit)
	if err != nil {
		return node.Memlock{Err: err}
	}
	return node.ParseUlimit("ulimit -a", string(b))
}

func (c *collector) kernelLog(ctx context.Context) node.KernelLog {
	b, err := c.r.Run(ctx, machine.CmdDmesg)
	return node.KernelLog{Source: "dmesg", Xids: node.ParseXids(b), Err: err}
}

func (c *collector) fabricManager(ctx context.Context) node.Text {
	b, err := c.r.Run(ctx, machine.CmdFabricManager)
	return node.Text{Source: fabricSource, Value: strings.TrimSpace(string(b)), Err: err}
}

// command is a command's output as text (its own words, not trimmed).
func (c *collector) command(cmd machine.Command) func(context.Context) node.Text {
	return func(ctx context.Context) node.Text {
		b, err := c.r.Run(ctx, cmd)
		return node.Text{Source: cmd.String(), Value: string(b), Err: err}
	}
}

// imexChannels holds the IMEX channel devices CUDA imports memory through.
const imexChannels = "dev/nvidia-caps-imex-channels"

// multiNodeNVLink reports whether a GPU of h belongs to an NVLink domain
// that spans nodes (its fabric cluster UUID is set).
func multiNodeNVLink(h *topology.Host) bool {
	for _, g := range h.GPUs {
		if g.Facts != nil && g.Facts.Fabric.MultiNode() {
			return true
		}
	}
	return false
}

func (c *collector) rdmaCore(context.Context) node.RDMACore {
	for _, dir := range []string{"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib"} {
		names, err := c.r.Names(dir)
		if err != nil {
			continue
		}
		for _, n := range names {
			if v := node.VerbsRelease(n); v != "" {
				return node.RDMACore{Version: v, Source: c.r.Display(dir + "/" + n)}
			}
		}
	}
	return node.RDMACore{}
}

func (c *collector) environ() node.Environ {
	if c.r.Live() {
		return node.Environ{Vars: node.FilterEnviron(os.Environ()), Known: true}
	}
	b, err := c.r.ReadFile(snapshot.EnvironFile)
	if err != nil {
		return node.Environ{}
	}
	return node.Environ{Vars: node.ParseEnviron(b), Known: true}
}

func (c *collector) libraries(context.Context) *node.Libraries {
	b, err := c.r.ReadFile(snapshot.LibrariesFile)
	if err != nil {
		return nil
	}
	l, err := node.ParseLibraries(b)
	if err != nil {
		return nil
	}
	return l
}

// capturedAt is when the snapshot was taken, per its manifest.
func (c *collector) capturedAt(context.Context) time.Time {
	m, err := snapshot.ReadManifest(c.r)
	if err != nil || m == nil {
		return time.Time{}
	}
	return m.CreatedAt
}

// topoFile reads the file NCCL_TOPO_FILE names; a relative path is taken
// from the current directory, as NCCL in this process would.
func (c *collector) topoFile(v string) node.TopoFile {
	t := node.TopoFile{Checked: true}
	p, err := filepath.Abs(v)
	if err == nil {
		var b []byte
		b, err = c.r.ReadFile(p)
		t.Size = len(b)
	}
	t.Err = err
	return t
}
