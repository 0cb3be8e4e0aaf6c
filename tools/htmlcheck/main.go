// Command htmlcheck opens an HTML file in headless Chromium and fails when
// the page logs a console error, throws, or makes any network request;
// it saves a full-page screenshot. It checks report.html and fleet.html, which must work
// offline: scripts/html-check.sh runs it.
//
//	htmlcheck [-browser PATH] [-screenshot OUT.png] [-width 1400] FILE.html
//
// It drives the browser through the DevTools protocol over a pipe
// (--remote-debugging-pipe: commands on fd 3, answers on fd 4, each a JSON
// message ended by a NUL byte), so it needs nothing but the browser. Every
// network request the page makes is both reported and refused (the
// browser's host resolver maps every name to nothing). Exit status: 0 the
// page is clean, 1 it is not, 2 the check could not run (no browser: the
// message says so).
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	browser := flag.String("browser", "", "the Chromium binary (default: $CHROMIUM, else chromium, chromium-browser, google-chrome on PATH)")
	shot := flag.String("screenshot", "", "write a full-page PNG screenshot here")
	width := flag.Int("width", 1400, "viewport width in CSS pixels")
	maxHeight := flag.Int("max-height", 0, "screenshot only the page's first N CSS pixels (0: the whole page)")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: htmlcheck [flags] FILE.html")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	bin, err := FindBrowser(*browser)
	if err != nil {
		fmt.Fprintln(os.Stderr, "htmlcheck:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res, err := Check(ctx, bin, flag.Arg(0), Options{Width: *width, Screenshot: *shot != "", MaxHeight: *maxHeight})
	if err != nil {
		fmt.Fprintln(os.Stderr, "htmlcheck:", err)
		os.Exit(2)
	}
	if *shot != "" {
		if err := os.WriteFile(*shot, res.PNG, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "htmlcheck:", err)
			os.Exit(2)
		}
		fmt.Printf("screenshot: %s (%dx%d CSS px)\n", *shot, res.Width, res.Height)
	}
	fmt.Printf("browser: %s\n", res.Browser)
	fmt.Printf("requests: %d (the page itself only: %v)\n", len(res.Requests), len(res.Problems) == 0)
	for _, p := range res.Problems {
		fmt.Println("PROBLEM:", p)
	}
	if len(res.Problems) > 0 {
		fmt.Printf("FAIL: %s: %d problem(s)\n", flag.Arg(0), len(res.Problems))
		os.Exit(1)
	}
	fmt.Printf("OK: %s: no console error, no exception, no network request\n", flag.Arg(0))
}

// FindBrowser is the Chromium to run: the one named, else $CHROMIUM, else
// the first of chromium, chromium-browser, google-chrome on PATH.
func FindBrowser(named string) (string, error) {
	if named == "" {
		named = os.Getenv("CHROMIUM")
	}
	if named != "" {
		return exec.LookPath(named)
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium found (install Debian's chromium, or name one with -browser or $CHROMIUM)")
}

// Options of a check.
type Options struct {
	Width      int
	Screenshot bool
	// MaxHeight, when above 0, keeps the screenshot to the page's first
	// MaxHeight CSS pixels (the top of a long page, for the docs).
	MaxHeight int
}

// Result is what the browser saw.
type Result struct {
	Browser  string
	Problems []string
	// Requests are the URLs the page requested, its own included.
	Requests []string
	PNG      []byte
	// Width and Height are the page's size in CSS pixels.
	Width, Height int
}

// message is one DevTools protocol message, in either direction.
type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// conn is the protocol over the pipe.
type conn struct {
	w      io.Writer
	in     chan message
	next   int
	events []message
}

func (c *conn) send(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	c.next++
	id := c.next
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(message{ID: id, Method: method, Params: p, SessionID: session})
	if err != nil {
		return nil, err
	}
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", method, ctx.Err())
		case m, ok := <-c.in:
			if !ok {
				return nil, fmt.Errorf("%s: the browser closed the pipe", method)
			}
			if m.ID == id {
				if m.Error != nil {
					return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
				}
				return m.Result, nil
			}
			if m.Method != "" {
				c.events = append(c.events, m)
			}
		}
	}
}

// waitFor collects events until one named method arrives.
func (c *conn) waitFor(ctx context.Context, method string) error {
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", method, ctx.Err())
		case m, ok := <-c.in:
			if !ok {
				return fmt.Errorf("waiting for %s: the browser closed the pipe", method)
			}
			if m.Method != "" {
				c.events = append(c.events, m)
			}
			if m.Method == method {
				return nil
			}
		}
	}
}

// drain collects the events that arrive within d.
func (c *conn) drain(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return
		case m, ok := <-c.in:
			if !ok {
				return
			}
			if m.Method != "" {
				c.events = append(c.events, m)
			}
		}
	}
}

// Check loads file in a fresh headless browser and reports what it saw.
func Check(ctx context.Context, browser, file string, o Options) (*Result, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, err
	}
	if o.Width <= 0 {
		o.Width = 1400
	}
	profile, err := os.MkdirTemp("", "htmlcheck-profile-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	toBrowser, cmdIn, err := os.Pipe() // we write, the browser reads on fd 3
	if err != nil {
		return nil, err
	}
	fromBrowser, cmdOut, err := os.Pipe() // the browser writes on fd 4
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(browser, BrowserArgs(profile, o.Width)...)
	cmd.ExtraFiles = []*os.File{toBrowser, cmdOut}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	toBrowser.Close()
	cmdOut.Close()
	defer func() {
		cmdIn.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	c := &conn{w: cmdIn, in: make(chan message, 256)}
	go func() {
		defer close(c.in)
		r := bufio.NewReaderSize(fromBrowser, 1<<20)
		for {
			b, err := r.ReadBytes(0)
			if len(b) > 1 {
				var m message
				if json.Unmarshal(b[:len(b)-1], &m) == nil {
					c.in <- m
				}
			}
			if err != nil {
				return
			}
		}
	}()
	res := &Result{}
	v, err := c.send(ctx, "", "Browser.getVersion", struct{}{})
	if err != nil {
		return nil, fmt.Errorf("%w (browser said: %s)", err, lastLines(stderr.String(), 5))
	}
	var ver struct {
		Product string `json:"product"`
	}
	_ = json.Unmarshal(v, &ver)
	res.Browser = ver.Product
	t, err := c.send(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return nil, err
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := json.Unmarshal(t, &target); err != nil {
		return nil, err
	}
	a, err := c.send(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(a, &att); err != nil {
		return nil, err
	}
	s := att.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable", "Network.enable"} {
		if _, err := c.send(ctx, s, m, struct{}{}); err != nil {
			return nil, err
		}
	}
	if _, err := c.send(ctx, s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": o.Width, "height": 1000, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		return nil, err
	}
	url := "file://" + abs
	if _, err := c.send(ctx, s, "Page.navigate", map[string]any{"url": url}); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "Page.loadEventFired"); err != nil {
		return nil, err
	}
	c.drain(500 * time.Millisecond)
	if o.Screenshot {
		lm, err := c.send(ctx, s, "Page.getLayoutMetrics", struct{}{})
		if err != nil {
			return nil, err
		}
		var metrics struct {
			CSSContentSize struct {
				Width  float64 `json:"width"`
				Height float64 `json:"height"`
			} `json:"cssContentSize"`
		}
		if err := json.Unmarshal(lm, &metrics); err != nil {
			return nil, err
		}
		res.Width, res.Height = o.Width, int(metrics.CSSContentSize.Height+0.5)
		h := min(max(res.Height, 100), 30000)
		if o.MaxHeight > 0 {
			h = min(h, o.MaxHeight)
		}
		if _, err := c.send(ctx, s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": o.Width, "height": h, "deviceScaleFactor": 1, "mobile": false}); err != nil {
			return nil, err
		}
		shot, err := c.send(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": o.MaxHeight <= 0})
		if err != nil {
			return nil, err
		}
		var data struct {
			Data string `json:"data"`
		}
		if err := json.Unmarshal(shot, &data); err != nil {
			return nil, err
		}
		if res.PNG, err = base64.StdEncoding.DecodeString(data.Data); err != nil {
			return nil, err
		}
		c.drain(200 * time.Millisecond)
	}
	_, _ = c.send(ctx, "", "Browser.close", struct{}{})
	res.Problems, res.Requests = Judge(c.events, url)
	return res, nil
}

// BrowserArgs are the browser's flags: headless, no sandbox (it may run
// as root in a container), a throw-away profile, nothing in the
// background, and every host name resolved to nothing so that no request
// leaves the machine even if the page made one.
func BrowserArgs(profile string, width int) []string {
	return []string{
		"--headless", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
		"--user-data-dir=" + profile, "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-default-apps", "--metrics-recording-only", "--mute-audio",
		"--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND",
		fmt.Sprintf("--window-size=%d,1000", width), "about:blank",
	}
}

// Judge turns the protocol events into problems: a console error or
// assertion, an uncaught exception, a log entry of level error, and any
// request other than the page's own (pageURL). It also lists every URL
// requested.
func Judge(events []message, pageURL string) (problems, requests []string) {
	for _, e := range events {
		switch e.Method {
		case "Runtime.consoleAPICalled":
			var p struct {
				Type string `json:"type"`
				Args []struct {
					Value       any    `json:"value"`
					Description string `json:"description"`
				} `json:"args"`
			}
			_ = json.Unmarshal(e.Params, &p)
			if p.Type == "error" || p.Type == "assert" {
				var parts []string
				for _, a := range p.Args {
					if a.Description != "" {
						parts = append(parts, a.Description)
					} else {
						parts = append(parts, fmt.Sprint(a.Value))
					}
				}
				problems = append(problems, "console."+p.Type+": "+strings.Join(parts, " "))
			}
		case "Runtime.exceptionThrown":
			var p struct {
				Details struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			_ = json.Unmarshal(e.Params, &p)
			problems = append(problems, "exception: "+strings.TrimSpace(p.Details.Text+" "+p.Details.Exception.Description))
		case "Log.entryAdded":
			var p struct {
				Entry struct {
					Level  string `json:"level"`
					Source string `json:"source"`
					Text   string `json:"text"`
					URL    string `json:"url"`
				} `json:"entry"`
			}
			_ = json.Unmarshal(e.Params, &p)
			if p.Entry.Level == "error" {
				problems = append(problems, fmt.Sprintf("log error (%s): %s %s", p.Entry.Source, p.Entry.Text, p.Entry.URL))
			}
		case "Network.requestWillBeSent":
			var p struct {
				Request struct {
					URL string `json:"url"`
				} `json:"request"`
			}
			_ = json.Unmarshal(e.Params, &p)
			requests = append(requests, p.Request.URL)
			if p.Request.URL != pageURL {
				problems = append(problems, "network request: "+p.Request.URL)
			}
		}
	}
	return problems, requests
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}
