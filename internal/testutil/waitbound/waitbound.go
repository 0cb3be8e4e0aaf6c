// Package waitbound runs more of a package's parallel tests at once when
// they wait on deadlines, timers and child processes rather than use the
// CPU. go test's -parallel defaults to GOMAXPROCS (2 on the development
// machine), so two tests that each wait out a one-second deadline hold
// both places while the cores are idle.
package waitbound

import (
	"flag"
	"fmt"
)

// Parallel sets -test.parallel to n unless it was given on the command
// line. Call it from TestMain before m.Run; it parses the flags.
func Parallel(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return
	}
	if err := flag.Set("test.parallel", fmt.Sprint(n)); err != nil {
		panic("waitbound: " + err.Error())
	}
}
