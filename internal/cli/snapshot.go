package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

func newSnapshot(g *globals) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "snapshot -o DIR|FILE.tgz",
		Short: "Capture everything gdrcheck reads on this host, for later runs with --root",
		Long: `snapshot runs discovery and collection over a recording root, then copies exactly
the sysfs and procfs files they read, the outputs of the commands they ran (dmesg,
systemctl is-active nvidia-fabricmanager, ...), the job environment, the libraries
found and the driver's GPU facts as commands/nvml.json, plus for a person reading it
nvidia-smi topo -m, nvidia-smi -q -x, nvidia-smi nvlink -s, ibv_devinfo -v and a few
host files (os-release, cpuinfo, meminfo). BARs, ROMs and files with side effects (resource*, rom, remove, reset)
are never read. Any later command can run on the result: gdrcheck topo --root FILE.tgz.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{code: ExitToolErr, err: fmt.Errorf("snapshot needs -o DIR or -o FILE.tgz")}
			}
			r, cleanup, err := g.openRoot()
			if err != nil {
				return err
			}
			defer cleanup()
			m, err := takeSnapshot(cmd.Context(), g, r, out)
			if err != nil {
				return &exitError{code: ExitToolErr, err: err}
			}
			fmt.Fprintf(g.out, "snapshot of %s written to %s: %d files, %d links, %d command outputs\n", m.Hostname, out, m.Files, m.Links, len(m.Commands))
			for _, c := range m.Commands {
				if c.Error != "" {
					fmt.Fprintf(g.out, "  %s: %s\n", c.Command, firstLine(c.Error))
				}
			}
			for _, e := range m.Errors {
				fmt.Fprintf(g.out, "  error: %s\n", e)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "where to write: a directory, or a .tgz/.tar.gz file")
	return cmd
}

// takeSnapshot runs discovery and collection, the stages that read the
// machine, through a recording root, and writes what they read: a snapshot
// holds what every later command needs by construction.
func takeSnapshot(ctx context.Context, g *globals, r machine.Root, out string) (*snapshot.Manifest, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	rec := machine.NewRecorder()
	rr := r.WithRecorder(rec)
	h, err := topology.Discover(ctx, topology.WithRoot(rr))
	if err != nil {
		return nil, err
	}
	f := collectFacts(ctx, rr, h)
	for _, c := range forHumansCommands {
		_, _ = rr.Run(ctx, c)
	}
	for _, rel := range forHumansFiles {
		_, _ = rr.ReadFile(rel)
	}
	o := snapshot.Options{Tool: "gdrcheck " + g.build.Version, Facts: h.GPUFacts, Extra: map[string][]byte{}}
	if f.Environ.Known {
		o.Extra[sysinfo.EnvironFile] = sysinfo.FormatEnviron(f.Environ.Vars)
	}
	if f.Libraries != nil {
		if b, err := f.Libraries.Marshal(); err == nil {
			o.Extra[sysinfo.LibrariesFile] = b
		}
	}
	if h.GPUFactsError != "" {
		o.FactsErr = fmt.Errorf("%s", h.GPUFactsError)
	}
	return snapshot.Write(ctx, r, rec, out, o)
}

// forHumansCommands and forHumansFiles are captured although no stage reads
// them: the vendor tools' own views and the host description a person
// compares gdrcheck's findings with when reading a snapshot.
var (
	forHumansCommands = []machine.Command{machine.CmdNvidiaSMITopo, machine.CmdNvidiaSMIQuery, machine.CmdNvidiaSMINVLink, machine.CmdIbvDevinfo}
	forHumansFiles    = []string{"proc/version", "proc/meminfo", "proc/cpuinfo", "proc/driver/nvidia/params", "etc/os-release"}
)

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
