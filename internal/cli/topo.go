package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

func newTopo(g *globals) *cobra.Command {
	var color string
	var format *formatValue
	var pcie, ncclEnv, force bool
	var topoFile, expect string
	cmd := &cobra.Command{
		Use:   "topo",
		Short: "Print the GPU/NIC topology matrix (as nvidia-smi topo -m) and the GPU→NIC pairing",
		Example: `  gdrcheck topo                     # as nvidia-smi topo -m, and the GPU→NIC pairing
  gdrcheck topo --pcie              # PCIe paths only, as nvidia-smi topo -mp
  gdrcheck topo --root node.tgz --format json
  gdrcheck topo --nccl-env > nccl.env # the NCCL settings this topology calls for, each with why
  gdrcheck topo --nccl-topo-file /etc/nccl-topo.xml --nccl-env  # NCCL's topology file, and the settings that use it
  gdrcheck topo --root node.tgz --nccl-topo-file -               # the file on standard output
  gdrcheck topo --nccl-topo-file /etc/nccl-topo.xml --expect vm.yaml  # a VM: the layout of the host below, from the site profile`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(colorModes, color) {
				return toolError(fmt.Errorf("--color %q: want %s", color, strings.Join(colorModes, ", ")))
			}
			if expect != "" && topoFile == "" {
				return toolError(fmt.Errorf("--expect places the devices of the topology file: it needs --nccl-topo-file"))
			}
			if topoFile != "" {
				return writeTopoFile(cmd, g, topoFile, expect, force, ncclEnv, format.Format())
			}
			return writeTextOrJSON(g, "topo", format.Format(), func() (*topology.Summary, error) {
				return app.Topo(cmd.Context(), g.node(), app.TopoOptions{PCIe: pcie})
			}, func(w io.Writer, s *topology.Summary) error {
				if ncclEnv {
					var b strings.Builder
					topology.WriteNCCLEnv(&b, s.Hostname, append(s.NCCLEnv(), topology.NCCLTopoFileSetting("")))
					_, err := io.WriteString(w, b.String())
					return err
				}
				// The matrix and the pairing are the topology's own text views.
				return writeTopoText(w, s, useColor(color, w))
			})
		},
	}
	format = addFormat(cmd.Flags(), nil, report.Text, report.JSON)
	cmd.Flags().BoolVar(&ncclEnv, "nccl-env", false, "text: print the NCCL settings the topology calls for (NCCL_IB_HCA in rail order, the RoCE GID, the front-end interface; NCCL_NET_GDR_LEVEL advisory), each after a comment saying why")
	cmd.Flags().StringVar(&topoFile, "nccl-topo-file", "", "write the node's layout as an NCCL topology file (NCCL_TOPO_FILE) at FILE, atomically (- for standard output); with --nccl-env, the settings follow with NCCL_TOPO_FILE")
	cmd.Flags().BoolVar(&force, "force", false, "--nccl-topo-file: replace a file gdrcheck did not write")
	cmd.Flags().StringVar(&expect, "expect", "", "--nccl-topo-file: a site profile whose layout (the GPUs and NICs that share a PCIe switch on the host) places them in the file, for a VM whose PCI tree is flattened")
	cmd.Flags().BoolVar(&pcie, "pcie", false, "PCIe paths only, no NV# (as nvidia-smi topo -mp)")
	cmd.Flags().StringVar(&color, "color", "auto", "underline the header as nvidia-smi does: auto (on a terminal), always, never")
	return cmd
}

// writeTopoFile is topo --nccl-topo-file: the file (or standard output),
// then the settings (--nccl-env) or a line saying what was written.
func writeTopoFile(cmd *cobra.Command, g *globals, path, expect string, force, env bool, f report.Format) error {
	if f != report.Text {
		return toolError(fmt.Errorf("--nccl-topo-file writes XML: --format %s does not apply", f))
	}
	if path == "-" && env {
		return toolError(fmt.Errorf("--nccl-topo-file - --nccl-env: both would go to standard output; give the file a path"))
	}
	s, xml, err := app.NCCLTopo(cmd.Context(), g.node(), app.TopoOptions{Expect: expect})
	if err != nil {
		return err
	}
	if path == "-" {
		_, err := g.out.Write(xml)
		return err
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := app.WriteNCCLTopoFile(path, xml, force); err != nil {
		return err
	}
	var b strings.Builder
	if env {
		topology.WriteNCCLEnv(&b, s.Hostname, append(s.NCCLEnv(), topology.NCCLTopoFileSetting(path)))
	} else {
		fmt.Fprintf(&b, "wrote %s: NCCL's topology of %s (%d GPUs, %d RDMA NICs); NCCL_TOPO_FILE=%s makes NCCL read it\n",
			printable.Line(path), printable.Line(cmp.Or(s.Hostname, "this host")), len(s.GPUs), len(s.NICs), printable.Line(path))
	}
	_, err = io.WriteString(g.out, b.String())
	return err
}

func writeTopoText(w io.Writer, s *topology.Summary, underline bool) error {
	if len(s.GPUs) == 0 && len(s.NICs) == 0 {
		// An empty matrix and its legend say nothing: say what there is.
		_, err := fmt.Fprintf(w, "No NVIDIA GPU and no RDMA NIC on the PCI bus of %s: there is no topology to draw (gdrcheck check says why, e.g. the driver or the devices' power).\n", printable.Line(cmp.Or(s.Hostname, "this host")))
		return err
	}
	if err := s.Matrix.WriteText(w, topology.RenderOptions{Underline: underline}); err != nil {
		return err
	}
	if s.Matrix.NVLinkUnknown && len(s.GPUs) > 1 {
		fmt.Fprintf(w, "\nNote: NVLink state unknown (%s): GPU pairs show their PCIe path only.\n", printable.Line(factsWhy(s)))
	}
	if len(s.GPUs) > 0 {
		if err := s.Pairing.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

func factsWhy(s *topology.Summary) string {
	if s.GPUFactsError != "" {
		return s.GPUFactsError
	}
	return "the driver did not report NVLink"
}

// colorModes are --color's values.
var colorModes = []string{"auto", "always", "never"}

func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termWidth is w's terminal width when w is a terminal (COLUMNS where
// set, else the terminal's own), 0 otherwise: output to a file or a pipe
// is never cut.
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	if n, _, err := term.GetSize(int(f.Fd())); err == nil && n >= 40 {
		return n
	}
	return 0
}
