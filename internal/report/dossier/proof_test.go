package dossier

import (
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// A hop's proof level from what it cites: configuration read is checked,
// traffic that passed is measured, anything failed is failed, and skips,
// unknowns and errors prove nothing.
func TestHopProof(t *testing.T) {
	type cite struct {
		st      result.Status
		traffic bool
	}
	for _, c := range []struct {
		name  string
		cites []cite
		want  result.Proof
	}{
		{"nothing cited", nil, result.ProofNotExercised},
		{"only skips and unknowns", []cite{{result.Skip, false}, {result.Unknown, false}, {result.Unknown, true}}, result.ProofNotExercised},
		{"a check broke", []cite{{result.Error, false}}, result.ProofNotExercised},
		{"a check passed", []cite{{result.Pass, false}, {result.Skip, false}}, result.ProofChecked},
		{"a check warned", []cite{{result.Warn, false}}, result.ProofChecked},
		{"checked, then measured", []cite{{result.Pass, false}, {result.Pass, true}}, result.ProofMeasured},
		{"measured first", []cite{{result.Pass, true}, {result.Pass, false}}, result.ProofMeasured},
		{"a measurement not judged", []cite{{result.Pass, false}, {result.Unknown, true}}, result.ProofChecked},
		{"measured, then failed", []cite{{result.Pass, true}, {result.Fail, true}}, result.ProofFailed},
		{"a check failed under a passing measurement", []cite{{result.Pass, true}, {result.Fail, false}}, result.ProofFailed},
	} {
		var r refs
		for i, x := range c.cites {
			r.add(string(rune('a'+i)), x.st, x.traffic)
		}
		if got := r.proof(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// The sign-off requires every hop and link; gdr false leaves the GDR
// segments out; a GPU without a NIC lacks its GDR path.
func TestSignOff(t *testing.T) {
	top := Topology{
		DataPaths: []DataPath{
			{GPU: 0, NIC: "mlx5_0", GDR: GDREnabled, Hops: []Hop{
				{Kind: HopGPUMemory, Name: "GPU0", Proof: result.ProofMeasured},
				{Kind: HopNIC, Name: "mlx5_0", Proof: result.ProofChecked},
				{Kind: HopFabric, Name: "InfiniBand", Proof: result.ProofNotExercised},
			}},
			{GPU: 1, GDR: GDRNoNIC, GDRWhy: "no RDMA NIC on this host", Hops: []Hop{{Kind: HopGPUMemory, Name: "GPU1", Proof: result.ProofMeasured}}},
		},
		GPULinks: []GPULink{{A: 0, B: 1, Proof: result.ProofMeasured}},
	}
	p, not := top.SignOff(true)
	want := []string{"GPU0 nic mlx5_0 (checked)", "GPU0 fabric InfiniBand (not-exercised)", "GPU1 GPU Direct RDMA path: no RDMA NIC on this host (not-exercised)"}
	if p != result.ProofNotExercised || !slices.Equal(not, want) {
		t.Errorf("with GDR: %s %q", p, not)
	}
	if p, not := top.SignOff(false); p != result.ProofMeasured || len(not) != 0 {
		t.Errorf("without GDR: %s %q", p, not)
	}
	top.GPULinks[0].Proof = result.ProofFailed
	if p, _ := top.SignOff(false); p != result.ProofFailed {
		t.Errorf("a failed link: %s", p)
	}
}
