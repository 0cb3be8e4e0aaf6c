package rendezvous

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs up to 8 parallel tests at once where -parallel is not
// given (its default is GOMAXPROCS, 2 on the development machine): this
// package's parallel tests wait on join deadlines and timeouts, not on
// the CPU (10 s of waiting and 0.7 CPU-s for the whole package), so more
// of them overlap. Scale tests, which use the CPU, stay serial.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", "8"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
