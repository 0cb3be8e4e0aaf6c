package collective

// Row is one line of an nccl-tests result table: one message size of one
// collective, measured out of place and in place. gdrcheck's native
// benchmark produces it and the nccl-tests reader reads it, so results of
// both have one JSON layout; names carry their units.
type Row struct {
	Bytes uint64 `json:"size_bytes"` // the "size" column
	Count uint64 `json:"count"`      // elements passed to NCCL
	Type  string `json:"type"`       // data type: float, half, bfloat16...
	// RedOp is the reduction ("sum"), "none" for collectives without one;
	// empty where the table has no redop column.
	RedOp string `json:"redop,omitempty"`
	// Root is the root rank, -1 for collectives without one; nil where the
	// table has no root column.
	Root *int `json:"root,omitempty"`
	// OutOfPlace and InPlace are the two halves; nil when not measured or
	// not printed.
	OutOfPlace *Measure `json:"out_of_place"`
	InPlace    *Measure `json:"in_place"`
	// Line is where a reader found the row (1-based); 0 for rows measured
	// by gdrcheck.
	Line int `json:"line,omitempty"`
}

// Measure is one half of a row.
type Measure struct {
	TimeUS float64 `json:"time_us"`   // mean time of one operation, µs
	AlgBW  float64 `json:"algbw_gbs"` // algorithm bandwidth, GB/s
	BusBW  float64 `json:"busbw_gbs"` // bus bandwidth, GB/s
	// Wrong is #wrong, the elements that differed in the checked runs;
	// nil when the result was not checked (nccl-tests prints N/A).
	Wrong *int64 `json:"wrong"`
}

// BestBusBW is the better of the row's two busbw cells and which half it
// is ("out-of-place" or "in-place"); 0 and "" when neither was measured.
func (r Row) BestBusBW() (float64, string) {
	best, place := -1.0, ""
	if r.OutOfPlace != nil {
		best, place = r.OutOfPlace.BusBW, "out-of-place"
	}
	if r.InPlace != nil && r.InPlace.BusBW > best {
		best, place = r.InPlace.BusBW, "in-place"
	}
	if best < 0 {
		best = 0
	}
	return best, place
}
