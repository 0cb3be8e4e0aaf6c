package machine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// DefaultCommandTimeout bounds every external tool the live host runs.
const DefaultCommandTimeout = 20 * time.Second

// CommandsDir is where a snapshot keeps captured command outputs.
const CommandsDir = "commands"

// ErrNotCaptured says a snapshot holds no output for a command.
var ErrNotCaptured = errors.New("not captured in this snapshot")

// Command is an external tool whose output the tool reads. Live, it is run
// under a deadline; on a snapshot its output is read from
// commands/<Key> instead.
type Command struct {
	Key     string   // file name under commands/
	Name    string   // program looked up on PATH
	Args    []string // arguments
	Timeout time.Duration
}

func (c Command) String() string { return strings.Join(append([]string{c.Name}, c.Args...), " ") }

// The commands a snapshot captures. gdrcheck reads all but two:
// CmdNvidiaSMINVLink and CmdIbvDevinfo are kept for a person reading the
// snapshot.
var (
	CmdNvidiaSMITopo   = Command{Key: "nvidia-smi-topo-m.txt", Name: "nvidia-smi", Args: []string{"topo", "-m"}}
	CmdNvidiaSMIQuery  = Command{Key: "nvidia-smi-q-x.xml", Name: "nvidia-smi", Args: []string{"-q", "-x"}}
	CmdNvidiaSMINVLink = Command{Key: "nvidia-smi-nvlink-s.txt", Name: "nvidia-smi", Args: []string{"nvlink", "-s"}}
	// CmdNvidiaSMINVLinkErrors is every NVLink's error counters, read
	// with nvidia-smi -q -x where NVML is not (a snapshot without
	// nvml.json, a host whose NVML does not load).
	CmdNvidiaSMINVLinkErrors = Command{Key: "nvidia-smi-nvlink-e.txt", Name: "nvidia-smi", Args: []string{"nvlink", "-e"}}
	CmdUlimit                = Command{Key: "ulimit-a.txt", Name: "sh", Args: []string{"-c", "ulimit -a"}}
	CmdIbvDevinfo            = Command{Key: "ibv_devinfo-v.txt", Name: "ibv_devinfo", Args: []string{"-v"}}
	CmdDmesg                 = Command{Key: "dmesg.txt", Name: "dmesg", Args: []string{"--time-format", "iso"}}
	CmdFabricManager         = Command{Key: "systemctl-nvidia-fabricmanager.txt", Name: "systemctl", Args: []string{"is-active", "nvidia-fabricmanager"}}
	// CmdFabricManagerVersion prints "Fabric Manager version is : X".
	CmdFabricManagerVersion = Command{Key: "nv-fabricmanager-version.txt", Name: "nv-fabricmanager", Args: []string{"--version"}}
	// CmdFabricManagerLog is fabric manager's recent journal, where it says
	// why it would not start (a version that does not match the driver's).
	// CmdIMEX and CmdIMEXCtl: the IMEX daemon of a multi-node NVLink
	// domain, its service and its view of the domain.
	CmdIMEX             = Command{Key: "systemctl-nvidia-imex.txt", Name: "systemctl", Args: []string{"is-active", "nvidia-imex"}}
	CmdIMEXCtl          = Command{Key: "nvidia-imex-ctl-N.txt", Name: "nvidia-imex-ctl", Args: []string{"-N"}}
	CmdFabricManagerLog = Command{Key: "journalctl-nvidia-fabricmanager.txt", Name: "journalctl", Args: []string{"-u", "nvidia-fabricmanager", "-n", "200", "--no-pager", "-o", "cat"}}
)

// CmdEthtoolModule is `ethtool -m NETDEV`: the diagnostics of the module
// in the interface's port (temperature, voltage, per-lane bias and optical
// power, the module's own thresholds). One per interface, so it is not
// among KnownCommands: a snapshot holds it where a reading ran it through
// a recording root. The module answers over a slow two-wire bus, hence its
// own deadline.
func CmdEthtoolModule(netdev string) Command {
	return Command{Key: "ethtool-m-" + netdev + ".txt", Name: "ethtool", Args: []string{"-m", netdev}, Timeout: 10 * time.Second}
}

// KnownCommands lists the commands a snapshot captures, in capture order.
func KnownCommands() []Command {
	return []Command{CmdNvidiaSMITopo, CmdNvidiaSMIQuery, CmdNvidiaSMINVLink, CmdNvidiaSMINVLinkErrors, CmdUlimit, CmdIbvDevinfo, CmdDmesg, CmdFabricManager, CmdFabricManagerVersion, CmdFabricManagerLog, CmdIMEX, CmdIMEXCtl}
}

// Run returns the standard output of cmd: on the live host by running it
// under its deadline (ctx may shorten it), on a snapshot by reading the
// captured file. A hung tool becomes an error naming the command.
func (r Root) Run(ctx context.Context, cmd Command) ([]byte, error) {
	if !r.Live() {
		b, err := r.ReadFile(CommandsDir + "/" + cmd.Key)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: %w (%s)", cmd, ErrNotCaptured, r.Display(CommandsDir+"/"+cmd.Key))
			}
			return nil, err
		}
		return b, nil
	}
	out, err := RunLive(ctx, cmd)
	r.rec.noteCommand(cmd, out, err)
	return out, err
}

// RunLive runs cmd on this machine under its deadline, killing its whole
// process group when the deadline passes.
func RunLive(ctx context.Context, cmd Command) ([]byte, error) {
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	path, err := exec.LookPath(cmd.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	c := exec.CommandContext(ctx, path, cmd.Args...)
	var stdout, stderr bytes.Buffer
	c.Stdout = &stdout
	c.Stderr = &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error {
		if c.Process != nil {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
		return nil
	}
	c.WaitDelay = 2 * time.Second
	err = c.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return stdout.Bytes(), fmt.Errorf("%s: no answer within %s (killed)", cmd, timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if len(msg) > 400 {
			msg = msg[:400] + "..."
		}
		if msg != "" {
			return stdout.Bytes(), fmt.Errorf("%s: %w: %s", cmd, err, msg)
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w", cmd, err)
	}
	return stdout.Bytes(), nil
}
