// Package report is gdrcheck's output layer: the versioned envelope every
// JSON document carries, and the renderers (table, Markdown, JUnit, JSON,
// Prometheus textfile) every command shares.
//
// A command builds an Envelope (what ran, where, when, its results and its
// own data) and hands it to Write with the format the user asked for. A new
// output format is one more Format and one more case in Write, over
// Envelope.Results; every command then has it. Data with metrics of its own
// (the dossier's) adds them through PrometheusData.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// SchemaVersion is the version of every envelope's layout. It changes when
// a member is renamed or removed or changes meaning, not when one is added.
const SchemaVersion = "v1"

// Schema is the schema name of a command's document, e.g.
// "gdrcheck.run/v1".
func Schema(command string) string { return "gdrcheck." + command + "/" + SchemaVersion }

// Tool is the gdrcheck build that produced a document.
type Tool struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// ResolveTool fills what the linker did not set from the Go build
// information: the module version and the VCS revision ("-dirty" when the
// tree was modified); "devel" and "unknown" when neither knows.
func ResolveTool(t Tool) Tool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if t.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			t.Version = bi.Main.Version
		}
		if t.Commit == "" {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					t.Commit = s.Value[:min(len(s.Value), 12)]
				}
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.modified" && s.Value == "true" && t.Commit != "" {
					t.Commit += "-dirty"
				}
			}
		}
	}
	if t.Version == "" {
		t.Version = "devel"
	}
	if t.Commit == "" {
		t.Commit = "unknown"
	}
	return t
}

// Run describes one invocation of gdrcheck.
type Run struct {
	Tool
	// Host is the machine gdrcheck ran on, which is not the machine it
	// judged when it read a snapshot (--root).
	Host      string    `json:"host"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	// Command is the command line, program name first.
	Command []string `json:"command"`
}

// Hostname is os.Hostname, or "" when the kernel does not say.
func Hostname() string {
	h, _ := os.Hostname()
	return h
}

// Envelope is one command's output document.
//
// In JSON it is an object whose first members are "schema", "run" and
// "results", followed by the members of Data when Data is a JSON object
// (so a document keeps the layout it had before it was enveloped), or by
// "data" otherwise. A member of Data named like an envelope member is an
// error, except "results" when it holds exactly the envelope's results
// (a check report's own list): it is then written once.
type Envelope struct {
	Schema string
	Run    Run
	// Results are every verdict of the command (never nil in JSON: a
	// consumer always finds the list).
	Results []result.Result
	// Data is the command's own document: a topology summary, a model
	// report, benchmark results.
	Data any
}

// Duration is how long the command ran.
func (e *Envelope) Duration() time.Duration { return e.Run.EndedAt.Sub(e.Run.StartedAt) }

// MarshalJSON writes the layout described on Envelope.
func (e Envelope) MarshalJSON() ([]byte, error) {
	results := e.Results
	if results == nil {
		results = []result.Result{}
	}
	head, err := json.Marshal(struct {
		Schema  string          `json:"schema"`
		Run     Run             `json:"run"`
		Results []result.Result `json:"results"`
	}{e.Schema, e.Run, results})
	if err != nil {
		return nil, err
	}
	if e.Data == nil {
		return head, nil
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1]) // without its closing brace
	if len(data) == 0 || data[0] != '{' {
		b.WriteString(`,"data":`)
		b.Write(data)
		b.WriteByte('}')
		return b.Bytes(), nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		switch key {
		case "schema", "run":
			return nil, fmt.Errorf("report: data member %q collides with the envelope's", key)
		case "results":
			if want, _ := json.Marshal(results); !bytes.Equal(raw, want) && (len(results) > 0 || string(raw) != "null") {
				return nil, fmt.Errorf("report: data member \"results\" differs from the envelope's results")
			}
			continue
		}
		k, _ := json.Marshal(key)
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(raw)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
