package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/printable"
)

func newSnapshot(g *globals) *cobra.Command {
	var out string
	var redact, force bool
	cmd := &cobra.Command{
		Use:   "snapshot --out DIR|FILE.tgz",
		Short: "Capture everything gdrcheck reads on this host, for later runs with --root",
		Example: `  gdrcheck snapshot --out node07.tgz             # for gdrcheck --root node07.tgz later, anywhere
  gdrcheck snapshot --redact --out vendor.tgz    # safe to send: serials, GUIDs, names, addresses replaced`,
		Long: `snapshot runs discovery and collection over a recording root, then copies exactly
the sysfs and procfs files they read, the outputs of the commands they ran (dmesg,
systemctl is-active nvidia-fabricmanager, ...), the job environment, the libraries
found and the driver's GPU facts as commands/nvml.json, plus for a person reading it
nvidia-smi topo -m, nvidia-smi -q -x, nvidia-smi nvlink -s, ibv_devinfo -v and a few
host files (os-release, cpuinfo, meminfo). BARs, ROMs and files with side effects (resource*, rom, remove, reset)
are never read. Any later command can run on the result: gdrcheck topo --root FILE.tgz.

The snapshot appears whole or not at all: it is made beside the target and renamed
into place. -o DIR must be new or empty (an older snapshot there is not overwritten);
-o FILE.tgz must not exist unless --force; another archive name (.zip, .tar.xz, ...) is
refused. Both are checked before anything is captured. An interrupted snapshot (Ctrl-C,
SIGTERM) writes nothing and exits 130.

Left out always: of the environment all but NCCL_*, CUDA_*, UCX_*, FI_*, OMPI_MCA_*,
NVSHMEM_*, TORCH_NCCL_*, NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES,
LD_LIBRARY_PATH and the launchers' rank variables, with secret-looking values masked;
of the kernel log all but the NVRM Xid lines; of the kernel command line all but the
IOMMU parameters. --redact also replaces GPU serials and UUIDs, the PCIe Device Serial
Number, MAC addresses, InfiniBand GUIDs, host names and IP addresses with pseudonyms,
the same value by the same pseudonym throughout the snapshot. See docs/snapshots.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{code: ExitToolErr, err: fmt.Errorf("snapshot needs --out DIR or --out FILE.tgz (-o)")}
			}
			m, err := g.session.Snapshot(cmd.Context(), app.SnapshotOptions{Node: g.node(), Out: out, Redact: redact, Force: force})
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
	cmd.Flags().StringVarP(&out, "out", "o", "", "where to write: a new or empty directory, or a .tgz/.tar.gz file")
	// --output was its name before every writer said --out.
	cmd.Flags().StringVar(&out, "output", "", "the same as --out")
	_ = cmd.Flags().MarkHidden("output")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing -o FILE.tgz")
	cmd.Flags().BoolVar(&redact, "redact", false, "replace serials, UUIDs, MACs, GUIDs, host names and IP addresses with pseudonyms")
	return cmd
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
