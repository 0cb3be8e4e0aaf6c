package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/testutil/long"
)

func ev(method, params string) message {
	return message{Method: method, Params: json.RawMessage(params)}
}

// Judge reports what must fail the page and nothing else.
func TestJudge(t *testing.T) {
	const page = "file:///d/report.html"
	for _, c := range []struct {
		name   string
		events []message
		want   []string
	}{
		{"the page itself only", []message{ev("Network.requestWillBeSent", `{"request":{"url":"file:///d/report.html"}}`)}, nil},
		{"a request elsewhere", []message{ev("Network.requestWillBeSent", `{"request":{"url":"https://cdn.example/x.js"}}`)}, []string{"network request: https://cdn.example/x.js"}},
		{"a data: URL is a request too", []message{ev("Network.requestWillBeSent", `{"request":{"url":"data:image/png;base64,AA=="}}`)}, []string{"network request: data:image/png;base64,AA=="}},
		{"console error", []message{ev("Runtime.consoleAPICalled", `{"type":"error","args":[{"type":"string","value":"boom"}]}`)}, []string{"console.error: boom"}},
		{"console log is fine", []message{ev("Runtime.consoleAPICalled", `{"type":"log","args":[{"type":"string","value":"hi"}]}`)}, nil},
		{"exception", []message{ev("Runtime.exceptionThrown", `{"exceptionDetails":{"text":"Uncaught","exception":{"description":"Error: x"}}}`)}, []string{"exception: Uncaught Error: x"}},
		{"log error", []message{ev("Log.entryAdded", `{"entry":{"level":"error","source":"network","text":"Failed to load resource","url":"http://x/"}}`)}, []string{"log error (network): Failed to load resource http://x/"}},
		{"log warning is fine", []message{ev("Log.entryAdded", `{"entry":{"level":"warning","source":"other","text":"w"}}`)}, nil},
	} {
		got, _ := Judge(c.events, page)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: Judge = %q, want %q", c.name, got, c.want)
		}
	}
}

// In a real browser: a clean page passes and is photographed; a page with
// a console error, an exception and an image from the network fails on
// each. It starts Chromium, so it runs with REQUIRE_BROWSER=1 (and fails
// without a browser) or as a long test (GDRCHECK_LONG=1, CI: skipped
// without a browser), never in a plain `go test ./...`, whose result would
// depend on what is installed.
func TestInBrowser(t *testing.T) {
	require := os.Getenv("REQUIRE_BROWSER") == "1"
	if !require {
		long.Skip(t)
	}
	bin, err := FindBrowser("")
	if err != nil {
		if require {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.html")
	bad := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(clean, []byte(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>c</title></head><body><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>b</title></head><body><img src="http://192.0.2.1/x.png"><script>console.error("planted"); throw new Error("thrown");</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := Check(ctx, bin, clean, Options{Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 0 {
		t.Errorf("clean page: %q", res.Problems)
	}
	if len(res.PNG) < 8 || string(res.PNG[1:4]) != "PNG" {
		t.Errorf("no PNG screenshot (%d bytes)", len(res.PNG))
	}
	res, err = Check(ctx, bin, bad, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(res.Problems, "\n")
	for _, want := range []string{"network request: http://192.0.2.1/x.png", "console.error: planted", "exception:"} {
		if !strings.Contains(all, want) {
			t.Errorf("bad page: %q missing from the problems:\n%s", want, all)
		}
	}
}
