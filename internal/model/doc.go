// Package model predicts what the hardware should reach: NCCL collectives
// as nccl-tests reports them, device, host and peer copies, and perftest's
// ib_write_bw, each with its bottleneck and formula, and judges a
// measurement against the prediction. Every number that is not a formula
// is a constant with its source (constants.go) or a GPU datasheet entry
// (spec.go).
package model
