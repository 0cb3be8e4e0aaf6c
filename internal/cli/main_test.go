package cli

import (
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/fakelib"
)

func TestMain(m *testing.M) { os.Exit(fakelib.RunTests(m)) }
