package snapshot_test

import (
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/scratch"
)

func TestMain(m *testing.M) {
	scratch.OnTmpfs()
	os.Exit(m.Run())
}
