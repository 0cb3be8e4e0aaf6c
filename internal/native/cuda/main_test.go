//go:build cgo

package cuda_test

import (
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

func TestMain(m *testing.M) { os.Exit(fakelib.RunTests(m)) }
