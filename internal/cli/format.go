package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gdrcheck/gdrcheck/internal/report"
)

// formatValue is a command's --format: one of the formats the command
// offers, checked when the flag is parsed, so a bad value is refused with
// the usage line before anything runs. Its help and its refusal are written
// from the same list (report.Choices), in the one order every command uses.
type formatValue struct {
	f       report.Format
	offered []report.Format
}

// addFormat registers --format (default text) on fl with the formats
// offered; notes add a word on a format's meaning for this command.
func addFormat(fl *pflag.FlagSet, notes map[report.Format]string, offered ...report.Format) *formatValue {
	v := &formatValue{f: report.Text, offered: offered}
	fl.Var(v, "format", "output format: "+report.Choices(notes, offered...))
	return v
}

func (v *formatValue) String() string { return string(v.f) }

func (v *formatValue) Type() string { return "format" }

func (v *formatValue) Set(s string) error {
	f, ok := report.Lookup(strings.TrimSpace(s), v.offered...)
	if !ok {
		return fmt.Errorf("want %s", report.Choices(nil, v.offered...))
	}
	v.f = f
	return nil
}

// Format is the format chosen (text when the command has no --format).
func (v *formatValue) Format() report.Format {
	if v == nil {
		return report.Text
	}
	return v.f
}
