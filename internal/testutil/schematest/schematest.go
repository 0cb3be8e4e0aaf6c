// Package schematest validates documents against the JSON Schemas the
// repository publishes (docs/schema), for tests.
package schematest

import (
	"bytes"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Path is the published schema file name under docs/schema, as an
// absolute path.
func Path(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "schema", name)
}

// Compile compiles the published schema name, asserting formats
// (date-time).
func Compile(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(Path(name))
	if err != nil {
		t.Fatalf("schema %s: %v", name, err)
	}
	return s
}

// Validate returns the schema's complaints about doc, nil when it is valid.
func Validate(s *jsonschema.Schema, doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}
