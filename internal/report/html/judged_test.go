package html

import (
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// A part's box is coloured by the results about it alone: its own
// subjects, not pairs with another part.
func TestForPart(t *testing.T) {
	j := newJudged([]result.Result{
		{ID: "a", Subject: "GPU0", Status: result.Pass},
		{ID: "b", Subject: "GPU0-xid", Status: result.Unknown},
		{ID: "c", Subject: "GPU0-mlx5_0", Status: result.Fail},
		{ID: "d", Subject: "p2p GPU0->GPU1", Status: result.Fail},
		{ID: "e", Subject: "h2d_pinned GPU0", Status: result.Warn},
		{ID: "f", Subject: "GPU10", Status: result.Fail},
		{ID: "g", Subject: "0000:18:00.0", Status: result.Skip},
		{ID: "h", Subject: "mlx5_0", Status: result.Fail},
	})
	for _, c := range []struct {
		keys  []string
		ids   []string
		worst result.Status
	}{
		{[]string{"GPU0", "0000:18:00.0"}, []string{"a", "b", "e", "g"}, result.Warn},
		{[]string{"mlx5_0"}, []string{"h"}, result.Fail},
		{[]string{"GPU3"}, nil, ""},
		{[]string{"0000:18:00.0"}, []string{"g"}, ""}, // a skip judges nothing
	} {
		var ids []string
		for _, r := range j.forPart(c.keys...) {
			ids = append(ids, r.ID)
		}
		if !slices.Equal(ids, c.ids) {
			t.Errorf("forPart(%q) = %q, want %q", c.keys, ids, c.ids)
		}
		if got := j.worstFor(c.keys...); got != c.worst {
			t.Errorf("worstFor(%q) = %q, want %q", c.keys, got, c.worst)
		}
	}
}
