// Package launch finds out which rank of which job this process is, from
// the environment the launchers set (Slurm, Open MPI, MPICH/Hydra/PMI,
// torchrun, Kubernetes indexed Jobs) and from flags, which override it. It
// is pure: a map of the environment and the flags in, a Job or an error
// naming the missing piece out.
package launch

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// DefaultPort is the rendezvous port when the launcher names a host but
// no port (Slurm, MPI, Kubernetes): GDRCHECK_RENDEZVOUS or --rendezvous
// choose another.
const DefaultPort = 29517

// Launcher names where a Job's identity came from.
type Launcher string

const (
	None      Launcher = ""           // no launcher: one process, as before
	Slurm     Launcher = "slurm"      // srun
	OpenMPI   Launcher = "openmpi"    // mpirun/mpiexec of Open MPI
	PMI       Launcher = "pmi"        // MPICH, Intel MPI, MVAPICH (Hydra, PMI)
	Torchrun  Launcher = "torchrun"   // torchrun, torch.distributed.run
	K8sJob    Launcher = "kubernetes" // an indexed Job (JOB_COMPLETION_INDEX)
	FlagsOnly Launcher = "flags"      // every piece from flags
)

// Job is this process's place in a multi-process run.
type Job struct {
	Launcher  Launcher
	Rank      int // global rank, 0..Size-1
	Size      int // world size
	LocalRank int // rank among the processes of this node (picks the GPU)
	// Node is this node's index where the launcher says (-1: unknown).
	Node int
	// Hosts are the job's nodes where the launcher lists them (Slurm).
	Hosts []string
	// Rendezvous is rank 0's address, host:port: where rank 0 listens and
	// the others connect.
	Rendezvous string
	// JobID is the launcher's job identity ("" unknown): the weak default
	// secret is derived from it.
	JobID string
}

// Multi reports a job of more than one process, or one the flags or a
// launcher made explicit.
func (j Job) Multi() bool { return j.Launcher != None }

// Flags are the command line's overrides; nil/empty: not given.
type Flags struct {
	Rank, WorldSize, LocalRank *int
	Rendezvous                 string // host:port, or host (DefaultPort)
}

// Detect reads the launcher's variables from env and applies the flags.
// With no launcher and no flags it returns a Job with Launcher None (the
// single-process mode). A launcher recognised but missing a piece (a rank
// without a world size, a torchrun job without MASTER_ADDR) is an error
// naming the variable or the flag that would give it.
func Detect(env map[string]string, f Flags) (Job, error) {
	j, err := fromEnv(env)
	if err != nil {
		return Job{}, err
	}
	if f.Rank != nil || f.WorldSize != nil || f.LocalRank != nil || f.Rendezvous != "" {
		if j.Launcher == None {
			j = Job{Launcher: FlagsOnly, Rank: -1, Size: -1, LocalRank: -1, Node: -1}
		}
		if f.Rank != nil {
			j.Rank = *f.Rank
		}
		if f.WorldSize != nil {
			j.Size = *f.WorldSize
		}
		if f.LocalRank != nil {
			j.LocalRank = *f.LocalRank
		}
		if f.Rendezvous != "" {
			j.Rendezvous = f.Rendezvous
		}
	}
	if j.Launcher == None {
		return j, nil
	}
	if v := env["GDRCHECK_RENDEZVOUS"]; v != "" && f.Rendezvous == "" {
		j.Rendezvous = v
	}
	return j, j.complete()
}

// complete fills the defaults and refuses what is missing or impossible.
func (j *Job) complete() error {
	src := string(j.Launcher)
	switch {
	case j.Size < 0:
		return fmt.Errorf("%s: the world size is unknown: give --world-size", src)
	case j.Size < 1:
		return fmt.Errorf("%s: world size %d: want at least 1", src, j.Size)
	case j.Rank < 0:
		return fmt.Errorf("%s: this process's rank is unknown: give --rank", src)
	case j.Rank >= j.Size:
		return fmt.Errorf("%s: rank %d is not one of 0..%d (world size %d)", src, j.Rank, j.Size-1, j.Size)
	}
	if j.LocalRank < 0 {
		if j.Launcher != FlagsOnly && j.Launcher != K8sJob {
			return fmt.Errorf("%s: the local rank is unknown: give --local-rank", src)
		}
		// One process per node (a pod, a process started by hand) drives
		// its first visible GPU.
		j.LocalRank = 0
	}
	if j.Size == 1 && j.Rendezvous == "" {
		j.Rendezvous = net.JoinHostPort("127.0.0.1", strconv.Itoa(DefaultPort))
	}
	if j.Rendezvous == "" {
		return fmt.Errorf("%s: rank 0's address is unknown: give --rendezvous HOST:PORT or set GDRCHECK_RENDEZVOUS", src)
	}
	addr, err := normalizeAddr(j.Rendezvous)
	if err != nil {
		return fmt.Errorf("%s: rendezvous %q: %v", src, j.Rendezvous, err)
	}
	j.Rendezvous = addr
	return nil
}

// normalizeAddr is host:port with DefaultPort where no port is given.
func normalizeAddr(a string) (string, error) {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		// A host alone (a bracketed IPv6 literal, a name, an IPv4).
		h := strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		if h == "" || strings.ContainsAny(h, " /") || (strings.Count(h, ":") > 0 && net.ParseIP(h) == nil) {
			return "", fmt.Errorf("want HOST:PORT")
		}
		return net.JoinHostPort(h, strconv.Itoa(DefaultPort)), nil
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("port %q: want 1..65535", port)
	}
	if host == "" {
		return "", fmt.Errorf("no host: the rendezvous is rank 0's address, never all interfaces")
	}
	return a, nil
}

// fromEnv recognises the first launcher whose rank variable is set, in
// the order: Slurm, Open MPI, PMI, torchrun, Kubernetes. Slurm comes first
// because srun of an MPI program sets PMI_RANK too; torchrun's RANK is
// looked at only with WORLD_SIZE, as RANK alone is too common a name.
func fromEnv(env map[string]string) (Job, error) {
	j := Job{Rank: -1, Size: -1, LocalRank: -1, Node: -1}
	var err error
	num := func(name string, dst *int) {
		v, ok := env[name]
		if !ok || v == "" || err != nil {
			return
		}
		n, e := strconv.Atoi(strings.TrimSpace(v))
		if e != nil || n < 0 {
			err = fmt.Errorf("%s=%q: not a number 0 or more", name, v)
			return
		}
		*dst = n
	}
	switch {
	case env["SLURM_PROCID"] != "" && (env["SLURM_STEP_ID"] != "" || env["SLURM_STEPID"] != ""):
		// A task of an srun step. A batch script (sbatch without srun)
		// has SLURM_PROCID and SLURM_NTASKS too, but no step id: it is one
		// process, not rank 0 of the allocation's tasks.
		j.Launcher = Slurm
		num("SLURM_PROCID", &j.Rank)
		num("SLURM_STEP_NUM_TASKS", &j.Size)
		if j.Size < 0 {
			num("SLURM_NTASKS", &j.Size)
		}
		if j.Size < 0 {
			num("SLURM_NPROCS", &j.Size)
		}
		num("SLURM_LOCALID", &j.LocalRank)
		num("SLURM_NODEID", &j.Node)
		j.JobID = env["SLURM_JOB_ID"]
		if s := firstOf(env, "SLURM_STEP_ID", "SLURM_STEPID"); s != "" && j.JobID != "" {
			j.JobID += "." + s
		}
		listVar := "SLURM_STEP_NODELIST"
		if env[listVar] == "" {
			listVar = "SLURM_JOB_NODELIST"
		}
		if list := env[listVar]; list != "" && err == nil {
			hosts, e := ExpandHostList(list)
			if e != nil {
				return Job{}, fmt.Errorf("%s=%q: %v", listVar, list, e)
			}
			j.Hosts = hosts
			j.Rendezvous = net.JoinHostPort(hosts[0], strconv.Itoa(DefaultPort))
		}
	case env["OMPI_COMM_WORLD_RANK"] != "":
		j.Launcher = OpenMPI
		num("OMPI_COMM_WORLD_RANK", &j.Rank)
		num("OMPI_COMM_WORLD_SIZE", &j.Size)
		num("OMPI_COMM_WORLD_LOCAL_RANK", &j.LocalRank)
		num("OMPI_COMM_WORLD_NODE_RANK", &j.Node)
		j.JobID = firstOf(env, "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE")
		sameHost(&j, "OMPI_COMM_WORLD_LOCAL_SIZE", num)
	case env["PMI_RANK"] != "":
		j.Launcher = PMI
		num("PMI_RANK", &j.Rank)
		num("PMI_SIZE", &j.Size)
		num("MPI_LOCALRANKID", &j.LocalRank)
		if j.LocalRank < 0 {
			num("PMI_LOCAL_RANK", &j.LocalRank)
		}
		j.JobID = firstOf(env, "PMI_KVSNAME", "PMIX_NAMESPACE")
		sameHost(&j, "MPI_LOCALNRANKS", num)
	case env["RANK"] != "" && env["WORLD_SIZE"] != "":
		j.Launcher = Torchrun
		num("RANK", &j.Rank)
		num("WORLD_SIZE", &j.Size)
		num("LOCAL_RANK", &j.LocalRank)
		num("GROUP_RANK", &j.Node)
		j.JobID = env["TORCHELASTIC_RUN_ID"]
		if h := env["MASTER_ADDR"]; h != "" {
			p := env["MASTER_PORT"]
			if p == "" {
				return Job{}, fmt.Errorf("torchrun: MASTER_ADDR=%s without MASTER_PORT", h)
			}
			// gdrcheck's own port is MASTER_PORT+1: torchrun's store may
			// hold MASTER_PORT itself.
			pn, e := strconv.Atoi(p)
			if e != nil || pn < 1 || pn >= 65535 {
				return Job{}, fmt.Errorf("torchrun: MASTER_PORT=%q: want 1..65534", p)
			}
			j.Rendezvous = net.JoinHostPort(h, strconv.Itoa(pn+1))
		}
		if j.LocalRank < 0 {
			return Job{}, fmt.Errorf("torchrun: RANK and WORLD_SIZE without LOCAL_RANK")
		}
	case env["JOB_COMPLETION_INDEX"] != "":
		// An indexed Job: one pod per index, the world size from the
		// flags (or GDRCHECK_WORLD_SIZE), rank 0's address from a headless
		// Service (--rendezvous or GDRCHECK_RENDEZVOUS).
		j.Launcher = K8sJob
		num("JOB_COMPLETION_INDEX", &j.Rank)
		num("GDRCHECK_WORLD_SIZE", &j.Size)
		j.Node = j.Rank
		j.JobID = env["JOB_NAME"]
	}
	if err != nil {
		return Job{}, err
	}
	return j, nil
}

// sameHost makes 127.0.0.1 the rendezvous of an MPI job whose processes
// all run on this node (local size = world size): an MPI launcher does not
// tell rank 0's host otherwise.
func sameHost(j *Job, localSize string, num func(string, *int)) {
	ls := -1
	num(localSize, &ls)
	if ls > 0 && ls == j.Size {
		j.Rendezvous = net.JoinHostPort("127.0.0.1", strconv.Itoa(DefaultPort))
	}
}

func firstOf(env map[string]string, names ...string) string {
	for _, n := range names {
		if v := env[n]; v != "" {
			return v
		}
	}
	return ""
}

// ExpandHostList expands a Slurm host list, "node[01-04,07],gpu-a,gpu[1-2]-ib":
// comma-separated names, each with bracketed ranges (zero padding kept)
// and lists, in order. Ranges are bounded (at most maxHosts names), and so
// is the work: nested ranges stop as soon as they would pass the bound.
func ExpandHostList(s string) ([]string, error) {
	var out []string
	for _, part := range splitTop(s) {
		if part == "" {
			continue
		}
		names, err := expandOne(part, maxHosts-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no host")
	}
	return out, nil
}

// splitTop splits at the commas outside brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(parts, strings.TrimSpace(s[start:]))
}

// maxHosts bounds a host list.
const maxHosts = 65536

var errTooMany = fmt.Errorf("more than %d hosts", maxHosts)

// expandOne expands one name with zero or more bracket groups, into at
// most budget names (more is errTooMany, found before they are made).
func expandOne(p string, budget int) ([]string, error) {
	open := strings.IndexByte(p, '[')
	if open < 0 {
		switch {
		case strings.ContainsAny(p, " \t"):
			return nil, fmt.Errorf("%q: white space in a host name", p)
		case strings.Contains(p, "]"):
			return nil, fmt.Errorf("%q: unbalanced ']'", p)
		case budget < 1:
			return nil, errTooMany
		}
		return []string{p}, nil
	}
	end := strings.IndexByte(p[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", p)
	}
	end += open
	prefix, body, rest := p[:open], p[open+1:end], p[end+1:]
	tails, err := expandOne(rest, budget) // "" expands to [""]
	if err != nil {
		return nil, err
	}
	var out []string
	for r := range strings.SplitSeq(body, ",") {
		lo, hi, found := strings.Cut(r, "-")
		if !found {
			hi = lo
		}
		a, e1 := strconv.Atoi(lo)
		b, e2 := strconv.Atoi(hi)
		if e1 != nil || e2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q: range %q: want N or N-M with N <= M", p, r)
		}
		if b-a > 65536 {
			return nil, fmt.Errorf("%q: range %q is too long", p, r)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for n := a; n <= b; n++ {
			num := strconv.Itoa(n)
			if len(num) < width {
				num = strings.Repeat("0", width-len(num)) + num
			}
			if len(out)+len(tails) > budget {
				return nil, errTooMany
			}
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return slices.Clip(out), nil
}

// Environ turns os.Environ's "K=V" list into the map Detect reads.
func Environ(kv []string) map[string]string {
	m := make(map[string]string, len(kv))
	for _, e := range kv {
		if k, v, ok := strings.Cut(e, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Split is how a job's ranks are grouped into the communicators a run
// measures, as nccl-tests' NCCL_TESTS_SPLIT groups them.
type Split string

const (
	SplitAll   Split = "all"   // one communicator of every rank
	SplitIntra Split = "intra" // one per node: the node's ranks (NVLink, P2P)
	SplitRail  Split = "rail"  // one per local index: the same GPU of every node, one NIC's rail
)

// ParseSplit reads --split.
func ParseSplit(s string) (Split, error) {
	switch Split(s) {
	case SplitAll, SplitIntra, SplitRail:
		return Split(s), nil
	}
	return "", fmt.Errorf("--split %q: want all, intra or rail", s)
}

// Color is rank's group under the split, given every rank's node (by
// rank): the node's index in order of first appearance (intra), or the
// rank's index among its node's ranks (rail); 0 for all. The key that
// orders a group is the rank itself. groups is the number of groups.
func (s Split) Color(nodes []string, rank int) (color, groups int) {
	if s == SplitAll || s == "" {
		return 0, 1
	}
	index := map[string]int{}
	local := make([]int, len(nodes))
	perNode := map[string]int{}
	for r, n := range nodes {
		if _, ok := index[n]; !ok {
			index[n] = len(index)
		}
		local[r] = perNode[n]
		perNode[n]++
	}
	if s == SplitIntra {
		return index[nodes[rank]], len(index)
	}
	most := 0
	for _, c := range perNode {
		most = max(most, c)
	}
	return local[rank], most
}
