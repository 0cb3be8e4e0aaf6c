//go:build ignore

// scrub re-captures a committed snapshot archive the way `gdrcheck snapshot
// --redact` writes one, keeping everything else (the tar headers, the
// manifest's date, tool and command statuses):
//
//	go run ./testdata/snapshots/scrub.go IN.tgz OUT.tgz
//
// Every regular file goes through sysinfo.ForSharing (environment
// allowlist with secrets masked, kernel log reduced to its Xid lines,
// kernel command line to its IOMMU parameters) and then through a
// redact.Redactor with a fresh key (serials, UUIDs, the PCIe Device Serial
// Number, MACs, GUIDs, host names, IP addresses). A manifest, where the
// archive has one, gets the pseudonymous host name and the left_out and
// redacted lists. `gdrcheck snapshot --root IN.tgz --redact -o OUT.tgz`
// would capture only what this gdrcheck reads and lose the manifest's
// command statuses, which is why this script exists.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot/redact"
)

type entry struct {
	hdr  *tar.Header
	data []byte
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run scrub.go IN.tgz OUT.tgz")
		os.Exit(2)
	}
	if err := scrub(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func scrub(in, out string) error {
	entries, err := read(in)
	if err != nil {
		return err
	}
	var hosts []string
	for _, e := range entries {
		switch rel(e.hdr.Name) {
		case snapshot.HostnameFile, "etc/hostname":
			hosts = append(hosts, strings.TrimSpace(string(e.data)))
		}
	}
	red := redact.New(hosts...)
	for _, e := range entries {
		if e.hdr.Typeflag != tar.TypeReg {
			continue
		}
		r := rel(e.hdr.Name)
		if r == snapshot.ManifestFile {
			var m snapshot.Manifest
			if err := json.Unmarshal(e.data, &m); err != nil {
				return fmt.Errorf("%s: %w", e.hdr.Name, err)
			}
			if m.Hostname != "" {
				m.Hostname = strings.TrimSpace(string(red.File(snapshot.HostnameFile, []byte(m.Hostname))))
			}
			m.LeftOut, m.Redacted = sysinfo.LeftOut(), redact.Classes
			if e.data, err = json.MarshalIndent(m, "", "  "); err != nil {
				return err
			}
		} else {
			e.data = red.File(r, sysinfo.ForSharing(r, e.data))
		}
		e.hdr.Size = int64(len(e.data))
	}
	return write(out, entries)
}

// rel is a member's path relative to the snapshot's root.
func rel(name string) string { return strings.TrimPrefix(name, "./") }

func read(p string) ([]*entry, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	var out []*entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out = append(out, &entry{hdr: h, data: b})
	}
}

func write(p string, entries []*entry) error {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		if err := tw.WriteHeader(e.hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(p, buf.Bytes(), 0o644)
}
