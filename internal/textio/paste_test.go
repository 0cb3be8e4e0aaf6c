package textio

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

func cleanAll(t *testing.T, in string, opt PasteOpt) ([]string, *PasteNote) {
	t.Helper()
	lr := NewLineReaderOpt("in", strings.NewReader(in), opt)
	var out []string
	for _, l := range lr.All() {
		out = append(out, l)
	}
	if err := lr.Err(); err != nil {
		t.Fatal(err)
	}
	return out, lr.Paste()
}

func TestPaste(t *testing.T) {
	for _, c := range []struct {
		name, in string
		opt      PasteOpt
		want     []string
		note     string // substring of the note; "" means the note is empty
	}{
		{"plain ncclog keeps host:pid:tid",
			"node1:123:456 [0] NCCL INFO Bootstrap\nnode1:123:456 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n", 0,
			[]string{"node1:123:456 [0] NCCL INFO Bootstrap", "node1:123:456 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB"}, ""},
		{"torchrun rank tags",
			"[rank0]:node1:1:2 [0] NCCL INFO a\n[rank1]:node1:1:3 [1] NCCL INFO b\nplain\n", 0,
			[]string{"node1:1:2 [0] NCCL INFO a", "node1:1:3 [1] NCCL INFO b", "plain"}, "torchrun"},
		{"torchrun default tags with space",
			"[default0]: x\n[default7]: y\n", 0, []string{"x", "y"}, "torchrun"},
		{"mpirun tags stripped",
			"[1,0]<stdout>:a\n[1,1]<stderr>: b\n", 0, []string{"a", "b"}, "mpirun"},
		{"mpiexec -prepend-rank tags stripped",
			"[0] # nThread 1\n[12] host:1:2 [3] NCCL INFO x\n", 0, []string{"# nThread 1", "host:1:2 [3] NCCL INFO x"}, "prepend-rank"},
		{"mpiexec -prepend-rank tags kept for nccl-tests",
			"[0] a\n[1] b\n", KeepLaunchTags, []string{"[0] a", "[1] b"}, ""},
		{"an NCCL device is not a rank tag",
			"[0] NCCL INFO a\n[1] NCCL INFO b\n", 0, []string{"[0] NCCL INFO a", "[1] NCCL INFO b"}, ""},
		{"mpirun tags kept for nccl-tests",
			"[1,0]<stdout>:a\n[1,1]<stderr>: b\n", KeepLaunchTags, []string{"[1,0]<stdout>:a", "[1,1]<stderr>: b"}, ""},
		{"srun labels",
			" 0: GPU0\tX\n 1: GPU1\tNV12\n12: x\n", 0, []string{"GPU0\tX", "GPU1\tNV12", "x"}, "srun"},
		{"kubectl prefix and timestamps stacked",
			"[pod/w-0/main] 2024-07-19T10:00:01.123456789Z a b\n[pod/w-0/main] 2024-07-19T10:00:02.5Z c\n", 0,
			[]string{"a b", "c"}, "kubectl"},
		{"timestamps before a table of the tool's own keep its border and alignment",
			"2024-07-19T10:00:01Z | Deployment | Pass |\n2024-07-19T10:00:01Z \tGPU0\tGPU1\n2024-07-19T10:00:02Z            8   2\n", 0,
			[]string{"| Deployment | Pass |", "\tGPU0\tGPU1", "           8   2"}, "timestamp"},
		{"compose-like viewer: timestamp then '| '",
			"2026-05-01 21:17:45.998 | [rank0]: x\n2026-05-01 21:17:47.660 | [rank1]: y\n", 0, []string{"x", "y"}, "timestamp + box '| ' + torchrun"},
		{"python logging timestamp",
			"2024-07-19 10:00:01,123 - x\n2024-07-19 10:00:02,123 - y\n", 0, []string{"x", "y"}, "timestamp"},
		{"bracketed timestamp",
			"[2024-07-19 10:00:01] x\n[2024-07-19 10:00:02] y\n", 0, []string{"x", "y"}, "timestamp"},
		{"syslog",
			"Jul 19 10:00:01 gpu1 kernel: NVRM: Xid 79\nJul 19 10:00:02 gpu1 kernel: y\n", 0, []string{"NVRM: Xid 79", "y"}, "timestamp"},
		{"markdown quote and fence",
			"> ```\n> # nThread 1\n>      8   2\n> ```\n", 0, []string{"# nThread 1", "     8   2"}, "2 lines skipped: 2 code fences"},
		{"fence and html of an issue",
			"<details>\n<summary>log</summary>\n\n```text\na\n```\n</details>\n", 0, []string{"", "a"}, "5 lines skipped"},
		{"indented block",
			"    # nThread 1\n        8   2\n    # Avg\n", 0, []string{"# nThread 1", "    8   2", "# Avg"}, "indentation"},
		{"nccl-tests rows alone keep their alignment when a header is at column 0",
			"# nThread 1\n           8   2\n          16   4\n", 0, []string{"# nThread 1", "           8   2", "          16   4"}, ""},
		{"right-aligned rows alone are not indented",
			"           8   2\n          16   4\n", 0, []string{"           8   2", "          16   4"}, ""},
		{"topo -m header tab is not an indentation",
			"\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \n", 0, []string{"\tGPU0\tGPU1", "GPU0\t X \tNV4", "GPU1\tNV4\t X "}, ""},
		{"dcgmi table is not a box",
			"+---+\n| Deployment | Pass |\n| Blacklist | Pass |\n", 0, []string{"+---+", "| Deployment | Pass |", "| Blacklist | Pass |"}, ""},
		{"harness box",
			"| a\n| b\n| c\n", 0, []string{"a", "b", "c"}, "box"},
		{"compose prefix",
			"worker-1  | a\nworker-1  | b\n", 0, []string{"a", "b"}, "compose"},
		{"shell prompts",
			"user@gpu1:~$ nvidia-smi topo -m\nx\n$ ./build/all_reduce_perf -g 8\n(venv) me@h:/w$ cat t.xml\n[root@pod /]# ib_write_bw\n# ./all_gather_perf\n# nThread 1\n", 0,
			[]string{"nvidia-smi topo -m", "x", "./build/all_reduce_perf -g 8", "cat t.xml", "ib_write_bw", "./all_gather_perf", "# nThread 1"},
			`shell prompt removed before "nvidia-smi topo -m" (line 1) and 4 more`},
		{"CRLF",
			"> a\r\n> b\r\n", 0, []string{"a", "b"}, "quote"},
		// Issue 26 class 7: a logger's prefix no shape lists, learned.
		{"test harness logger after a timestamp, learned",
			"2019-07-16 03:43:24,132 process          L0458 DEBUG| [stdout] # nThread 1\n" +
				"2019-07-16 03:43:24,133 process          L0458 DEBUG| [stdout]            8   2\n" +
				"2019-07-16 03:43:24,134 process          L0458 DEBUG| [stdout] | Deployment | Pass |\n" +
				"2019-07-16 03:43:24,135 process          L0458 DEBUG| [stdout] \n", 0,
			[]string{"# nThread 1", "           8   2", "| Deployment | Pass |", ""}, `timestamp + learned "process          L0458 DEBUG| [stdout] " removed from 4 lines`},
		{"Ray worker prefix over an NCCL log: NCCL's host:pid:tid stays",
			"(RayWorker pid=75833) bms-1:75833:76055 [3] NCCL INFO Channel 01/0 : 3[af000] -> 0[18000] via P2P/IPC\n" +
				"(RayWorker pid=75833) bms-1:75833:76055 [3] NCCL INFO Channel 02/0 : 3[af000] -> 0[18000] via P2P/IPC\n" +
				"(RayWorker pid=75830) bms-1:75830:76056 [0] NCCL INFO Channel 05/0 : 0[18000] -> 1[3b000] via P2P/IPC\n", 0,
			[]string{"bms-1:75833:76055 [3] NCCL INFO Channel 01/0 : 3[af000] -> 0[18000] via P2P/IPC",
				"bms-1:75833:76055 [3] NCCL INFO Channel 02/0 : 3[af000] -> 0[18000] via P2P/IPC",
				"bms-1:75830:76056 [0] NCCL INFO Channel 05/0 : 0[18000] -> 1[3b000] via P2P/IPC"}, `learned "(RayWorker pid=75833) "`},
		{"a logger prefix stops before a rank tag kept for nccl-tests",
			"(w pid=1) [0] # nThread 1\n(w pid=1) [0]      8   2\n(w pid=1) [0] # Avg\n", KeepLaunchTags,
			[]string{"[0] # nThread 1", "[0]      8   2", "[0] # Avg"}, `learned "(w pid=1) "`},
		{"nothing is learned from an NCCL log, key: value lines or two lines",
			"h:1:2 [0] NCCL INFO a : b\nh:1:2 [0] NCCL INFO c : d\nh:1:2 [0] NCCL INFO e : f\n Device : mlx5_0\n", 0,
			[]string{"h:1:2 [0] NCCL INFO a : b", "h:1:2 [0] NCCL INFO c : d", "h:1:2 [0] NCCL INFO e : f", " Device : mlx5_0"}, ""},
		{"a learned prefix needs three lines",
			"(w pid=1) a\n(w pid=1) b\n", 0, []string{"(w pid=1) a", "(w pid=1) b"}, ""},
		{"a prefix on a minority of lines is kept",
			"[rank0]: a\nb\nc\nd\n", 0, []string{"[rank0]: a", "b", "c", "d"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, note := cleanAll(t, c.in, c.opt)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("lines\n got %q\nwant %q", got, c.want)
			}
			s := note.String()
			if c.note == "" && s != "" || c.note != "" && !strings.Contains(s, c.note) {
				t.Errorf("note %q, want %q", s, c.note)
			}
		})
	}
}

func TestPasteLineNumbers(t *testing.T) {
	lr := NewLineReader("in", strings.NewReader("```\n> a\n```\nb\n"))
	var nums []int
	for n := range lr.All() {
		nums = append(nums, n)
	}
	if len(nums) != 2 || nums[0] != 2 || nums[1] != 4 {
		t.Errorf("line numbers %v, want [2 4]", nums)
	}
}

func TestPasteReader(t *testing.T) {
	in := "$ cat topo.xml\n```xml\n> <system version=\"1\">\n>   <cpu numaid=\"0\">\n" + "> " + strings.Repeat("x", 200<<10) + "\n```\n"
	br := bufio.NewReaderSize(strings.NewReader(in), 4096)
	head, _ := br.Peek(4096)
	p := DetectPaste(head, 0)
	b, err := io.ReadAll(NewPasteReader(p, br))
	if err != nil {
		t.Fatal(err)
	}
	want := "cat topo.xml\n\n<system version=\"1\">\n  <cpu numaid=\"0\">\n" + strings.Repeat("x", 200<<10) + "\n\n"
	if string(b) != want {
		t.Errorf("got %q...", b[:min(len(b), 120)])
	}
}

// pasteBenchInput is 4 MiB of typical lines: NCCL log lines (they start
// with a letter, so the prompt check looks for '@'), nccl-tests rows and
// '#' header lines.
func pasteBenchInput() []byte {
	lines := []string{
		"node-17:12345:12399 [3] NCCL INFO Channel 03/0 : 3[3] -> 4[4] via P2P/CUMEM/read",
		"node-17:12345:12399 [3] NCCL INFO Connected all rings",
		"   134217728      33554432     float     sum      -1   1234.5  108.72  190.26      0   1230.1  109.11  190.94      0",
		"#  Rank  0 Group  0 Pid  28307 on      gpu59 device  0 [0x16] NVIDIA H100 80GB HBM3",
	}
	var b []byte
	for len(b) < 4<<20 {
		for _, l := range lines {
			b = append(b, l...)
			b = append(b, '\n')
		}
	}
	return b
}

func BenchmarkPasteClean(b *testing.B) {
	in := pasteBenchInput()
	p := DetectPaste(in[:HeadSize], 0)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		rest, n := in, 0
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			n++
			p.Clean(rest[:i], n)
			rest = rest[i+1:]
		}
	}
}

// BenchmarkPasteLearned: the lines of a Ray-prefixed NCCL log (vllm
// issue 2442), whose prefix is learned, cleaned one by one.
func BenchmarkPasteLearned(b *testing.B) {
	line := "(RayWorker pid=75833) bms-airtrunk-c-g1v2-app-10-214-144-75:75833:76055 [3] NCCL INFO Channel 01/0 : 3[af000] -> 0[18000] via P2P/IPC\n"
	in := bytes.Repeat([]byte(line), (4<<20)/len(line))
	p := DetectPaste(in[:HeadSize], 0)
	if len(p.layers) != 1 || p.layers[0].sh != shLearned {
		b.Fatalf("layers %+v", p.layers)
	}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		rest, n := in, 0
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			n++
			p.Clean(rest[:i], n)
			rest = rest[i+1:]
		}
	}
}

func BenchmarkLineReader(b *testing.B) {
	in := pasteBenchInput()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		lr := NewLineReader("in", bytes.NewReader(in))
		for range lr.All() {
		}
	}
}

// FuzzPaste: whatever the input, DetectPaste and Clean do not panic, a
// cleaned line is a suffix of the line (prefixes are only removed), and
// the line reader numbers the lines it gives in order.
func FuzzPaste(f *testing.F) {
	for _, s := range []string{
		"[rank0]:a\n[rank1]:b\n", "> ```\n> x\n> ```\n", "2024-07-19T10:00:01Z | a |\n", "$ cmd\n# nThread 1\n",
		"(w pid=1) a\n(w pid=2) b\n(w pid=3) c\n", "2019-07-16 03:43:24,132 p L1 DEBUG| [stdout] x\n2019-07-16 03:43:24,133 p L1 DEBUG| [stdout] y\n2019-07-16 03:43:24,134 p L1 DEBUG| [stdout] \n",
		"[pod/a/b] [2024-07-19 10:00:01] x\n", "Jul 19 10:00:01 h k: x\n", "(v) u@h:~$ x\n", "    a\n    b\n", "[u@h d]# ./x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		p := DetectPaste(in, 0)
		for n, l := range bytes.Split(in, []byte("\n")) {
			out, skip := p.Clean(l, n+1)
			if !skip && !bytes.HasSuffix(l, out) {
				t.Fatalf("line %q cleaned to %q: not a suffix", l, out)
			}
		}
		_ = p.Note().String()
		lr := NewLineReader("in", bytes.NewReader(in))
		last := 0
		for n := range lr.All() {
			if n <= last {
				t.Fatalf("line %d after %d", n, last)
			}
			last = n
		}
	})
}
