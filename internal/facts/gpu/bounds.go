package gpu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Bounds on the GPU facts a snapshot may hold. The file itself is at most
// what the door reads (machine.DefaultMaxRead); these bound what decoding
// it may cost, since a few bytes of JSON ("{}," per GPU) decode into a
// structure a hundred times larger, and the checks compare GPUs pairwise.
const (
	// MaxGPUs is the most GPUs one host's facts may list. NVML numbers
	// the GPUs of one operating system; the largest nodes have 16.
	MaxGPUs = 256
	// maxNVLinks is the most NVLinks of one GPU (NVML knows 36).
	maxNVLinks = 64
	// maxClockEvents is the most clock event reasons of one GPU.
	maxClockEvents = 64
	// maxFactErrors is the most failed calls one collection records.
	maxFactErrors = 1 << 14
	// maxFactString is the longest string (a name, a UUID, an error).
	maxFactString = 4 << 10
	// maxFactDepth is the deepest nesting of objects and arrays.
	maxFactDepth = 8
	// maxOtherArray bounds an array of a field gdrcheck does not read.
	maxOtherArray = 1 << 10
)

// arrayLimit is the most elements the array at path may hold; path names
// fields from the top ("gpus", "gpus[].nvlinks").
func arrayLimit(path string) int {
	switch path {
	case "gpus":
		return MaxGPUs
	case "gpus[].nvlinks", "gpus[].nvlink_counters":
		return maxNVLinks
	case "gpus[].clock_events":
		return maxClockEvents
	case "p2p":
		return MaxGPUs * (MaxGPUs - 1)
	case "errors":
		return maxFactErrors
	}
	return maxOtherArray
}

// errShape says a facts file is larger in some dimension than any host's.
var errShape = errors.New("larger than any host's GPU facts")

// checkFactsShape reads b token by token, holding nothing, and refuses a
// facts file whose arrays, strings or nesting exceed the bounds above. A
// syntax error is left to the decoder, which names the line.
func checkFactsShape(b []byte) error {
	type frame struct {
		path    string
		array   bool
		n       int    // elements so far (arrays)
		key     string // the current key (objects)
		wantKey bool   // the next token is a key (objects)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	stack := []frame{}
	for {
		tok, err := dec.Token()
		if err != nil {
			// The end (io.EOF), or a syntax error that the decoder
			// reports with its line.
			return nil
		}
		if s, ok := tok.(string); ok && len(s) > maxFactString {
			return fmt.Errorf("%w: a string of %d bytes (at most %d)", errShape, len(s), maxFactString)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		path := ""
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			switch {
			case top.array:
				top.n++
				if lim := arrayLimit(top.path); top.n > lim {
					return fmt.Errorf("%w: %s has more than %d elements", errShape, top.path, lim)
				}
				path = top.path + "[]"
			case top.wantKey:
				top.key, _ = tok.(string)
				top.wantKey = false
				continue
			default:
				top.wantKey = true
				path = top.key
				if top.path != "" {
					path = top.path + "." + top.key
				}
			}
		}
		if d, ok := tok.(json.Delim); ok {
			if len(stack) >= maxFactDepth {
				return fmt.Errorf("%w: nested more than %d deep", errShape, maxFactDepth)
			}
			stack = append(stack, frame{path: path, array: d == '[', wantKey: d == '{'})
		}
	}
}
