package pairing

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// grid reads "PIX PXB; SYS PIX": rows separated by ";", cells by spaces.
func grid(t *testing.T, s string) [][]level.Level {
	t.Helper()
	var out [][]level.Level
	for row := range strings.SplitSeq(s, ";") {
		var r []level.Level
		for _, c := range strings.Fields(row) {
			l, _, err := level.Parse(c)
			if err != nil {
				t.Fatal(err)
			}
			r = append(r, l)
		}
		out = append(out, r)
	}
	return out
}

// show is "NIC/nearest,nearest" for each GPU, space separated.
func show(cs []Choice) string {
	var s []string
	for _, c := range cs {
		var near []string
		for _, n := range c.Nearest {
			near = append(near, fmt.Sprint(n))
		}
		s = append(s, fmt.Sprintf("%d/%s", c.NIC, strings.Join(near, ",")))
	}
	return strings.Join(s, " ")
}

func TestAssign(t *testing.T) {
	// favour prefers NIC 1 for every GPU.
	favour := func(gpu, nic int) float64 {
		if nic == 1 {
			return 1
		}
		return 0
	}
	for _, c := range []struct {
		name   string
		levels string
		prefer func(gpu, nic int) float64
		want   string
	}{
		{"one GPU, nearest NIC", "NODE PIX SYS", nil, "1/1"},
		{"no NIC", "", nil, "-1/"},
		{"column order among equals", "PIX PIX", nil, "0/0,1"},
		{"prefer among equals", "PIX PIX", favour, "1/1,0"},
		{"prefer never beats a nearer level", "PIX PXB", favour, "0/0"},
		{"distinct NICs: the first GPU moves to its other NIC",
			"PIX PIX; PIX NODE", nil, "1/0,1 0/0"},
		{"augmenting path through two GPUs",
			"PIX PIX SYS; SYS PIX PIX; PIX SYS SYS", nil, "1/0,1 2/1,2 0/0"},
		{"a GPU matched at a nearer level makes room at that level",
			"PIX PIX; PXB N/A", nil, "1/0,1 0/0"},
		{"a GPU with several NICs on its switch leaves one to a neighbour",
			"PIX PIX PIX; PXB SYS SYS", nil, "1/0,1,2 0/0"},
		{"a GPU never moves farther to make room",
			"PIX PXB; PXB N/A", nil, "0/0 0/0"},
		{"farther levels fill in once nearer ones are taken",
			"PIX SYS; PXB SYS; SYS SYS", nil, "0/0 0/0 1/0,1"},
		{"a GPU shares its PIX NIC rather than take a spare beyond PXB (DGX-2)",
			"PIX SYS; PIX SYS", nil, "0/0 0/0"},
		{"DGX-2-like: 16 GPUs, two per PIX NIC, two storage NICs across the host bridges",
			"PIX NODE NODE NODE SYS SYS SYS SYS NODE SYS; PIX NODE NODE NODE SYS SYS SYS SYS NODE SYS; NODE PIX NODE NODE SYS SYS SYS SYS NODE SYS; NODE PIX NODE NODE SYS SYS SYS SYS NODE SYS; NODE NODE PIX NODE SYS SYS SYS SYS NODE SYS; NODE NODE PIX NODE SYS SYS SYS SYS NODE SYS; NODE NODE NODE PIX SYS SYS SYS SYS NODE SYS; NODE NODE NODE PIX SYS SYS SYS SYS NODE SYS; SYS SYS SYS SYS PIX NODE NODE NODE SYS NODE; SYS SYS SYS SYS PIX NODE NODE NODE SYS NODE; SYS SYS SYS SYS NODE PIX NODE NODE SYS NODE; SYS SYS SYS SYS NODE PIX NODE NODE SYS NODE; SYS SYS SYS SYS NODE NODE PIX NODE SYS NODE; SYS SYS SYS SYS NODE NODE PIX NODE SYS NODE; SYS SYS SYS SYS NODE NODE NODE PIX SYS NODE; SYS SYS SYS SYS NODE NODE NODE PIX SYS NODE", nil, "0/0 0/0 1/1 1/1 2/2 2/2 3/3 3/3 4/4 4/4 5/5 5/5 6/6 6/6 7/7 7/7"},
		{"beyond PXB anyway: a NIC of its own",
			"PHB NODE; PHB NODE", nil, "0/0 1/0"},
		{"more GPUs than NICs share the least used nearest",
			"PIX PIX; PIX PIX; PIX PIX; PIX PIX", nil, "0/0,1 1/0,1 0/0,1 1/0,1"},
		{"sharing keeps preference order among the least used",
			"PIX PIX; PIX PIX; PIX PIX", favour, "1/1,0 0/1,0 1/1,0"},
		{"no known path: share any NIC", "N/A N/A", nil, "0/0,1"},
		{"X and NV# are not GPU-NIC paths", "NV4 PHB; X PHB", nil, "1/1 1/1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := show(Assign(grid(t, c.levels), c.prefer)); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestAssignEmptyAndRagged(t *testing.T) {
	if got := Assign(nil, nil); len(got) != 0 {
		t.Errorf("no GPUs: %v", got)
	}
	// A short row: the missing cell is unknown.
	got := Assign([][]level.Level{{level.PIX, level.PIX}, {level.PIX}}, nil)
	if show(got) != "1/0,1 0/0" {
		t.Errorf("ragged rows: %s", show(got))
	}
}

// TestAssignProperties: on random matrices every GPU gets a NIC, Nearest
// lists exactly the NICs at the GPU's best level, and no GPU leaves an
// unused NIC nearer than its own, or as near as a NIC it shares.
func TestAssignProperties(t *testing.T) {
	cells := []level.Level{level.PIX, level.PXB, level.PHB, level.NODE, level.SYS, level.Unknown}
	seed := uint32(1)
	next := func(n int) int {
		seed = seed*1664525 + 1013904223
		return int(seed>>16) % n
	}
	for range 2000 {
		gpus, nics := 1+next(8), 1+next(10)
		levels := make([][]level.Level, gpus)
		for g := range levels {
			for range nics {
				levels[g] = append(levels[g], cells[next(len(cells))])
			}
		}
		got := Assign(levels, nil)
		users := make([]int, nics)
		for _, c := range got {
			if c.NIC < 0 {
				t.Fatalf("%v: a GPU without NIC: %s", levels, show(got))
			}
			users[c.NIC]++
		}
		for g, c := range got {
			best := slices.Min(levels[g])
			var near []int
			for n, l := range levels[g] {
				if l == best {
					near = append(near, n)
				}
			}
			if !slices.Equal(near, c.Nearest) {
				t.Fatalf("%v: GPU%d nearest %v, want %v", levels, g, c.Nearest, near)
			}
			own := levels[g][c.NIC]
			for n, l := range levels[g] {
				if users[n] > 0 || l == level.Unknown {
					continue
				}
				if l < own || l == own && users[c.NIC] > 1 {
					t.Fatalf("%v: GPU%d has NIC%d at %v (%d users) while NIC%d at %v is unused: %s", levels, g, c.NIC, own, users[c.NIC], n, l, show(got))
				}
			}
		}
	}
}
