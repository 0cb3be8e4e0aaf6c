package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/report/printable"
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
are never read. Any later command can run on the result: gdrcheck topo --root FILE.tgz.

The snapshot appears whole or not at all: it is made beside the target and renamed
into place. -o DIR must be new or empty (an older snapshot there is not overwritten),
and an interrupted snapshot (Ctrl-C, SIGTERM) writes nothing and exits 130.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{code: ExitToolErr, err: fmt.Errorf("snapshot needs -o DIR or -o FILE.tgz")}
			}
			m, err := g.session.Snapshot(cmd.Context(), app.SnapshotOptions{Node: g.node(), Out: out})
			if err != nil {
				return err
			}
			l := printable.Line // the host name and the errors come from the host
			fmt.Fprintf(g.out, "snapshot of %s written to %s: %d files, %d links, %d command outputs\n", l(m.Hostname), l(out), m.Files, m.Links, len(m.Commands))
			for _, c := range m.Commands {
				if c.Error != "" {
					fmt.Fprintf(g.out, "  %s: %s\n", l(c.Command), l(firstLine(c.Error)))
				}
			}
			for _, e := range m.Errors {
				fmt.Fprintf(g.out, "  error: %s\n", l(e))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "where to write: a new or empty directory, or a .tgz/.tar.gz file")
	return cmd
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
