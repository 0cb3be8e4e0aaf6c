package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalKills: the first Ctrl-C cancels the context and cleanup
// starts; a second one ends the process at once instead of being
// swallowed. The test runs itself as the process that gets the signals.
func TestSecondSignalKills(t *testing.T) {
	if os.Getenv("GDRCHECK_SIGNAL_CHILD") == "1" {
		ctx, stop := signalContext()
		defer stop()
		fmt.Println("ready")
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond) // the handler is removed right after the context ends
		fmt.Println("cleaning up")
		time.Sleep(5 * time.Second) // a long cleanup the second signal cuts short
		fmt.Println("cleanup finished")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondSignalKills$")
	cmd.Env = append(os.Environ(), "GDRCHECK_SIGNAL_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("child said %q, want %q", lines.Text(), want)
		}
	}
	expect("ready")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	expect("cleaning up")
	start := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		t.Logf("child: %s", lines.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child exited with %v", err)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("child not killed by the second SIGINT: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the second signal took %s", d)
	}
}
