//go:build cgo

package cudadrv_test

import (
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

func TestMain(m *testing.M) { os.Exit(fakelib.RunTests(m)) }
