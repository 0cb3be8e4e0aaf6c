package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
)

func newBenchNVLS(g *globals) *cobra.Command {
	var o app.NVLSOptions
	var size string
	var format *formatValue
	cmd := &cobra.Command{
		Use:   "nvls",
		Short: "NVLink SHARP: create a multicast object and bind memory of every GPU to it (CUDA driver API), as NCCL's NVLS does",
		Example: `  gdrcheck bench nvls                     # on an NVSwitch node: every GPU joins one multicast object
  gdrcheck bench nvls --force             # anywhere: the multicast attribute as the driver reports it`,
		Long: `bench nvls loads the CUDA driver library (libcuda.so.1) and, for the GPUs of this node, reads
CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, creates a multicast object, adds every GPU to it,
allocates memory on each GPU and binds it to the object (cuMulticastCreate, cuMulticastAddDevice,
cuMemCreate, cuMulticastBindMem), then unbinds and releases everything. These are the calls
NCCL's NVLS set-up makes; they fail when fabric manager is down or at another version than the
driver. Each call runs under --call-timeout; the verdict (nvls.multicast) names the call, the GPU
and the CUresult of a failure. A pass means configured and bound: no data is moved and no
bandwidth measured (bench nccl measures NVLS all_reduce). On a node without NVSwitch the probe
is skipped unless --force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := format.Format()
			if o.CallTimeout <= 0 {
				return toolError(fmt.Errorf("--call-timeout %s: must be positive", o.CallTimeout))
			}
			n, err := collective.ParseSize(size)
			if err != nil || n == 0 {
				return toolError(fmt.Errorf("--size %s: want a positive size such as 2M", size))
			}
			o.Bytes, o.Warn = n, g.errOut
			if o.Devices != "" {
				if _, err := app.ParseDevices(o.Devices); err != nil {
					return err
				}
			}
			env, dir, err := g.session.BenchNVLS(cmd.Context(), g.node(), o)
			if env != nil {
				if f == report.JSON {
					if werr := report.WriteJSON(g.out, env); werr != nil {
						return werr
					}
				} else {
					bench.WriteNVLSText(g.out, env.Data.(*bench.NVLSReport), env.Results)
					if dir != "" {
						fmt.Fprintf(g.out, "Results: %s\n", printable.Line(dir+"/results.json"))
					}
				}
			}
			return benchError(err)
		},
	}
	fl := cmd.Flags()
	format = addFormat(fl, nil, report.Text, report.JSON)
	fl.StringVar(&o.LibCUDA, "libcuda", "", "path of libcuda.so.1 (default: the loader's search, then the usual driver folders; GDRCHECK_LIBCUDA)")
	fl.StringVar(&o.Devices, "devices", "", "CUDA devices to bind, e.g. 0,1 (default: every GPU)")
	fl.StringVar(&size, "size", "2M", "bytes of the multicast object per GPU, rounded up to the driver's granularities")
	fl.BoolVar(&o.Force, "force", false, "probe a node without NVSwitch too (the verdict then says what the driver reported)")
	fl.DurationVar(&o.CallTimeout, "call-timeout", 60*time.Second, "deadline of each driver call; a call that overruns is named and the driver not called again")
	fl.StringVar(&o.Out, "out", "", "directory for results.json (default gdrcheck-results/bench-nvls-<time>)")
	return cmd
}
