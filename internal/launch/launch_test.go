package launch

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func ip(n int) *int { return &n }

func TestDetect(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		flags   Flags
		want    Job
		wantErr string
	}{
		{name: "no launcher", env: map[string]string{"HOME": "/root"}, want: Job{Rank: -1, Size: -1, LocalRank: -1, Node: -1}},
		{name: "slurm", env: map[string]string{"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "SLURM_NODEID": "2",
			"SLURM_JOB_NODELIST": "gpu[01-04,07]", "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"},
			want: Job{Launcher: Slurm, Rank: 5, Size: 16, LocalRank: 1, Node: 2, Hosts: []string{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"},
				Rendezvous: "gpu01:29517", JobID: "4242.0"}},
		{name: "slurm batch script is one process", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "16", "SLURM_LOCALID": "0",
			"SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_JOB_ID": "4242"}, want: Job{Rank: -1, Size: -1, LocalRank: -1, Node: -1}},
		{name: "slurm step size wins", env: map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "16", "SLURM_STEP_NUM_TASKS": "2", "SLURM_LOCALID": "1",
			"SLURM_STEP_ID": "3", "SLURM_JOB_NODELIST": "gpu01"},
			want: Job{Launcher: Slurm, Rank: 1, Size: 2, LocalRank: 1, Node: -1, Hosts: []string{"gpu01"}, Rendezvous: "gpu01:29517"}},
		{name: "slurm step list wins", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0", "SLURM_STEPID": "0",
			"SLURM_JOB_NODELIST": "a[1-9]", "SLURM_STEP_NODELIST": "a[3-4]"},
			want: Job{Launcher: Slurm, Rank: 0, Size: 2, LocalRank: 0, Node: -1, Hosts: []string{"a3", "a4"}, Rendezvous: "a3:29517"}},
		{name: "slurm without node list", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0", "SLURM_STEP_ID": "0"},
			wantErr: "rank 0's address is unknown"},
		{name: "slurm bad number", env: map[string]string{"SLURM_PROCID": "x", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0"}, wantErr: `SLURM_PROCID="x"`},
		{name: "slurm bad step node list", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_STEP_NODELIST": "n[2-1]"},
			wantErr: `SLURM_STEP_NODELIST="n[2-1]"`},
		{name: "slurm rank past size", env: map[string]string{"SLURM_PROCID": "2", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0", "SLURM_STEP_ID": "0", "SLURM_JOB_NODELIST": "n1"},
			wantErr: "rank 2 is not one of 0..1"},
		{name: "openmpi one host", env: map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
			"OMPI_COMM_WORLD_LOCAL_SIZE": "4", "OMPI_COMM_WORLD_NODE_RANK": "0"},
			want: Job{Launcher: OpenMPI, Rank: 1, Size: 4, LocalRank: 1, Node: 0, Rendezvous: "127.0.0.1:29517"}},
		{name: "openmpi two hosts needs rendezvous", env: map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "16",
			"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "8"}, wantErr: "give --rendezvous HOST:PORT"},
		{name: "openmpi two hosts with env", env: map[string]string{"OMPI_COMM_WORLD_RANK": "9", "OMPI_COMM_WORLD_SIZE": "16",
			"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "8", "GDRCHECK_RENDEZVOUS": "10.0.0.1"},
			want: Job{Launcher: OpenMPI, Rank: 9, Size: 16, LocalRank: 1, Node: -1, Rendezvous: "10.0.0.1:29517"}},
		{name: "openmpi without size", env: map[string]string{"OMPI_COMM_WORLD_RANK": "1"}, wantErr: "world size is unknown"},
		{name: "pmi", env: map[string]string{"PMI_RANK": "3", "PMI_SIZE": "4", "MPI_LOCALRANKID": "3", "MPI_LOCALNRANKS": "4", "PMI_KVSNAME": "kvs_77"},
			want: Job{Launcher: PMI, Rank: 3, Size: 4, LocalRank: 3, Node: -1, Rendezvous: "127.0.0.1:29517", JobID: "kvs_77"}},
		{name: "pmi without local rank", env: map[string]string{"PMI_RANK": "3", "PMI_SIZE": "4", "GDRCHECK_RENDEZVOUS": "h:1"},
			wantErr: "local rank is unknown"},
		{name: "torchrun", env: map[string]string{"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "MASTER_ADDR": "10.1.1.1", "MASTER_PORT": "29500", "GROUP_RANK": "2"},
			want: Job{Launcher: Torchrun, Rank: 2, Size: 4, LocalRank: 0, Node: 2, Rendezvous: "10.1.1.1:29501"}},
		{name: "torchrun without port", env: map[string]string{"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "MASTER_ADDR": "m"},
			wantErr: "without MASTER_PORT"},
		{name: "torchrun without local rank", env: map[string]string{"RANK": "2", "WORLD_SIZE": "4", "MASTER_ADDR": "m", "MASTER_PORT": "1"},
			wantErr: "without LOCAL_RANK"},
		{name: "RANK alone is not a launcher", env: map[string]string{"RANK": "2"}, want: Job{Rank: -1, Size: -1, LocalRank: -1, Node: -1}},
		{name: "kubernetes", env: map[string]string{"JOB_COMPLETION_INDEX": "3", "JOB_NAME": "bench"},
			flags: Flags{WorldSize: ip(4), Rendezvous: "bench-0.bench.default.svc:30000"},
			want:  Job{Launcher: K8sJob, Rank: 3, Size: 4, LocalRank: 0, Node: 3, Rendezvous: "bench-0.bench.default.svc:30000", JobID: "bench"}},
		{name: "kubernetes without size", env: map[string]string{"JOB_COMPLETION_INDEX": "3"}, wantErr: "give --world-size"},
		{name: "flags only", flags: Flags{Rank: ip(1), WorldSize: ip(2), Rendezvous: "127.0.0.1:4000"},
			want: Job{Launcher: FlagsOnly, Rank: 1, Size: 2, LocalRank: 0, Node: -1, Rendezvous: "127.0.0.1:4000"}},
		{name: "flags without rank", flags: Flags{WorldSize: ip(2), Rendezvous: "127.0.0.1:4000"}, wantErr: "give --rank"},
		{name: "flags override slurm", env: map[string]string{"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "SLURM_STEP_ID": "0", "SLURM_JOB_NODELIST": "n1"},
			flags: Flags{Rank: ip(0), WorldSize: ip(2), LocalRank: ip(0), Rendezvous: "[::1]:7"},
			want:  Job{Launcher: Slurm, Rank: 0, Size: 2, LocalRank: 0, Node: -1, Hosts: []string{"n1"}, Rendezvous: "[::1]:7"}},
		{name: "all interfaces refused", flags: Flags{Rank: ip(0), WorldSize: ip(2), Rendezvous: ":4000"}, wantErr: "never all interfaces"},
		{name: "bad port", flags: Flags{Rank: ip(0), WorldSize: ip(2), Rendezvous: "h:99999"}, wantErr: "want 1..65535"},
		{name: "zero world", flags: Flags{Rank: ip(0), WorldSize: ip(0), Rendezvous: "h:1"}, wantErr: "world size 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Detect(c.env, c.flags)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
			if got.Multi() != (c.want.Launcher != None) {
				t.Errorf("Multi() = %v", got.Multi())
			}
		})
	}
}

func TestExpandHostList(t *testing.T) {
	cases := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "node1", want: []string{"node1"}},
		{in: "node[01-04,07]", want: []string{"node01", "node02", "node03", "node04", "node07"}},
		{in: "a,b[1-2],c", want: []string{"a", "b1", "b2", "c"}},
		{in: "r[1-2]-n[08-10]", want: []string{"r1-n08", "r1-n09", "r1-n10", "r2-n08", "r2-n09", "r2-n10"}},
		{in: "gpu[9-10]-ib", want: []string{"gpu9-ib", "gpu10-ib"}},
		{in: "x[3-1]", wantErr: "N <= M"},
		{in: "x[1-2", wantErr: "without ']'"},
		{in: "x]", wantErr: "unbalanced"},
		{in: "x[a]", wantErr: "range"},
		{in: "", wantErr: "no host"},
		{in: "x[0-99999999]", wantErr: "too long"},
		// The review's D16: a space is named, not an unbalanced bracket.
		{in: "gpu2;touch PWN", wantErr: "white space in a host name"},
		{in: "a[0-65535]", want: nil},
		{in: "a[0-65535],b", wantErr: "more than 65536 hosts"},
		// Nested ranges: refused before the product is built (the
		// review's D6: 738 MB and 8 s for the first, out of memory for
		// the second).
		{in: "a[0-3000][0-3000]", wantErr: "more than 65536 hosts"},
		{in: "a[0-65536][0-65536]", wantErr: "more than 65536 hosts"},
		{in: "a[0-9][0-9][0-9][0-9][0-9][0-9]", wantErr: "more than 65536 hosts"},
	}
	for _, c := range cases {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		got, err := ExpandHostList(c.in)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20 || time.Since(start) > 2*time.Second {
			t.Errorf("%q: %d MiB allocated, %s", c.in, a>>20, time.Since(start))
		}
		if c.want == nil && c.wantErr == "" {
			if err != nil || len(got) != 65536 {
				t.Errorf("%q: %d hosts, %v", c.in, len(got), err)
			}
			continue
		}
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: err = %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestSecret(t *testing.T) {
	slurm := Job{Launcher: Slurm, JobID: "4242.0", Rendezvous: "n1:29517"}
	cases := []struct {
		name    string
		env     map[string]string
		file    []byte
		job     Job
		src     SecretSource
		wantErr string
	}{
		{name: "env", env: map[string]string{"GDRCHECK_SECRET": "0123456789abcdef"}, file: []byte("ignored-ignored-ignored"), job: slurm, src: SecretEnv},
		{name: "env too short", env: map[string]string{"GDRCHECK_SECRET": "short"}, wantErr: "at least 16"},
		{name: "file", file: []byte("  0123456789abcdef0123\n"), job: slurm, src: SecretFile},
		{name: "file too short", file: []byte("x\n"), wantErr: "--secret-file holds 1"},
		{name: "weak", job: slurm, src: SecretWeak},
		{name: "none", job: Job{Launcher: FlagsOnly}, wantErr: "set GDRCHECK_SECRET"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, src, err := Secret(c.env, c.file, c.job)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || src != c.src || len(s) < 16 {
				t.Fatalf("%q %s %v", s, src, err)
			}
		})
	}
	a, _, _ := Secret(nil, nil, slurm)
	other := slurm
	other.JobID = "4243.0"
	b, _, _ := Secret(nil, nil, other)
	if string(a) == string(b) {
		t.Error("two jobs derive the same weak secret")
	}
}

func TestSplitColor(t *testing.T) {
	nodes := []string{"a", "a", "b", "b", "c", "c"}
	cases := []struct {
		split  Split
		colors []int
		groups int
	}{
		{SplitAll, []int{0, 0, 0, 0, 0, 0}, 1},
		{SplitIntra, []int{0, 0, 1, 1, 2, 2}, 3},
		{SplitRail, []int{0, 1, 0, 1, 0, 1}, 2},
	}
	for _, c := range cases {
		for r, want := range c.colors {
			got, groups := c.split.Color(nodes, r)
			if got != want || groups != c.groups {
				t.Errorf("%s rank %d: color %d of %d, want %d of %d", c.split, r, got, groups, want, c.groups)
			}
		}
	}
	// Ranks interleaved over nodes (round-robin placement).
	if got, _ := SplitRail.Color([]string{"a", "b", "a", "b"}, 2); got != 1 {
		t.Errorf("rail of rank 2 of a,b,a,b = %d, want 1", got)
	}
	if _, err := ParseSplit("ring"); err == nil {
		t.Error("ParseSplit accepted ring")
	}
}
