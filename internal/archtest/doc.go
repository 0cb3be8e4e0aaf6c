// Package archtest holds tests of the module's architecture: which
// packages may touch the machine, run commands or use cgo.
package archtest
