// Package app holds gdrcheck's use-cases: what each command does, from its
// options to its document, without flags or output formats. The command
// line (package cli) turns flags into options, calls a use-case and hands
// the result to a renderer of package report.
package app

import (
	"time"

	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Session is one invocation of gdrcheck: what every document's envelope
// says about the run. Clock and Host are injectable so that tests write
// stable documents.
type Session struct {
	Tool    report.Tool
	Host    string
	Command []string
	Clock   func() time.Time
}

// Now is the session's clock (time.Now when unset), in UTC.
func (s *Session) Now() time.Time {
	if s.Clock == nil {
		return time.Now().UTC()
	}
	return s.Clock().UTC()
}

// Envelope wraps a command's results and data, stamped as ending now.
func (s *Session) Envelope(command string, started time.Time, results []result.Result, data any) *report.Envelope {
	return &report.Envelope{
		Schema:  report.Schema(command),
		Run:     report.Run{Tool: s.Tool, Host: s.Host, StartedAt: started, EndedAt: s.Now(), Command: s.Command},
		Results: results,
		Data:    data,
	}
}
