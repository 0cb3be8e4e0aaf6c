package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

func newSnapshot(g *globals) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "snapshot -o DIR|FILE.tgz",
		Short: "Capture everything gdrcheck reads on this host, for later runs with --root",
		Long: `snapshot runs discovery (and every read-only check) over a recording root, then copies
exactly the sysfs and procfs files they read, the outputs of the commands they ran
(nvidia-smi -q -x, nvidia-smi topo -m, ulimit -a, ...) and the driver's GPU facts as
commands/nvml.json. BARs, ROMs and files with side effects (resource*, rom, remove, reset)
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

// takeSnapshot reads the host the way every command does, through a
// recording root, and writes what was read.
func takeSnapshot(ctx context.Context, g *globals, r machine.Root, out string) (*snapshot.Manifest, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	rec := machine.NewRecorder()
	rr := r.WithRecorder(rec)
	h, err := topology.Discover(ctx, topology.WithRoot(rr))
	if err != nil {
		return nil, err
	}
	// Every read-only check reads through the recorder too, so a snapshot
	// holds what `gdrcheck check --root` needs.
	env := checkEnv(ctx, rr, h, nil, 0)
	checks.Run(ctx, env, checks.All(), checks.Options{})
	// Command outputs a replay may want even if discovery did not need them.
	for _, c := range machine.KnownCommands() {
		_, _ = rr.Run(ctx, c)
	}
	for _, rel := range snapshotExtras {
		_, _ = rr.ReadFile(rel)
	}
	o := snapshot.Options{Tool: "gdrcheck " + g.build.Version, Facts: h.GPUFacts, Extra: map[string][]byte{}}
	if env.EnvironKnown {
		o.Extra[checks.EnvironFile] = checks.FormatEnviron(env.Environ)
	}
	if env.Libraries != nil {
		if b, err := json.MarshalIndent(env.Libraries, "", "  "); err == nil {
			o.Extra[checks.LibrariesFile] = b
		}
	}
	if h.GPUFactsError != "" {
		o.FactsErr = fmt.Errorf("%s", h.GPUFactsError)
	}
	return snapshot.Write(ctx, r, rec, out, o)
}

// snapshotExtras are host facts a person reading a snapshot expects even
// when no check needed them.
var snapshotExtras = []string{
	"proc/cmdline", "proc/version", "proc/modules", "proc/meminfo", "proc/cpuinfo",
	"proc/driver/nvidia/version", "proc/driver/nvidia/params", "proc/sys/kernel/osrelease",
	"proc/sys/kernel/hostname", "proc/self/limits", "etc/os-release",
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
