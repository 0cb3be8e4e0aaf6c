// Package linegen makes text lines for the tests that check a reader's
// hand-written scanner against the regular expression it replaces: lines
// glued from pieces at random, and real lines with one or two tokens
// dropped, doubled or replaced. The generator is seeded: a failure
// repeats.
package linegen

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// Gen makes lines from a fixed seed.
type Gen struct {
	rng *rand.Rand
}

// New returns a generator seeded with seed.
func New(seed uint64) *Gen { return &Gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

// Glue joins 1 to max pieces drawn from parts; after each piece a blank
// follows with probability blank (0: never).
func (g *Gen) Glue(parts []string, max int, blank float64) string {
	var b strings.Builder
	for k := g.rng.IntN(max); k >= 0; k-- {
		b.WriteString(parts[g.rng.IntN(len(parts))])
		if blank > 0 && g.rng.Float64() < blank {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// Mutant takes a template line's tokens, makes 1 to edits changes (a
// token dropped, doubled or replaced by one of parts, or left alone), and
// joins the tokens with separators from seps: the first one half of the
// time, any one the other half.
func (g *Gen) Mutant(tmpl, parts, seps []string, edits int) string {
	toks := slices.Clone(tmpl)
	for range 1 + g.rng.IntN(edits) {
		if len(toks) == 0 {
			break
		}
		switch k := g.rng.IntN(len(toks)); g.rng.IntN(4) {
		case 0:
			toks = slices.Delete(toks, k, k+1)
		case 1:
			toks = slices.Insert(toks, k, toks[k])
		case 2:
			toks[k] = parts[g.rng.IntN(len(parts))]
		}
	}
	var b strings.Builder
	for i, tok := range toks {
		if i > 0 {
			sep := seps[0]
			if g.rng.IntN(2) == 1 {
				sep = seps[g.rng.IntN(len(seps))]
			}
			b.WriteString(sep)
		}
		b.WriteString(tok)
	}
	return b.String()
}
