#!/usr/bin/env bash
# Runs on a GPU machine from the repository root: the native engine's
# acceptance checks that are not about speed.
#  1. compute-sanitizer memcheck on a small run of every collective and copy
#  2. a poisoned output is reported as #wrong > 0 and exit 1
#  3. no NCCL library: a clear error and exit 2
#  4. a GPU whose memory another process holds: a clear error and exit 2
#  5. Ctrl-C (SIGINT) mid-run: exit 130 and a valid, partial results.json
#  6. Ctrl-C twice (the second during the cleanup the first started): the
#     process ends at once, and results.json is still valid JSON
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/engine"
B=${GDRCHECK:-bin/gdrcheck}
export NCCL_NVLS_ENABLE=0
rc=0
say() { echo "== $*"; }

say "1. compute-sanitizer memcheck"
# NCCL's own initialisation probes kernels with cudaFuncGetAttributes and
# gets cudaErrorNoKernelImageForDevice (API errors, not memory errors); the
# same NCCL call from nccl-tests shows them too, so count them for both and
# judge memory errors with API error reporting off.
scripts/device/build-nccl-tests.sh || exit 2
compute-sanitizer --tool memcheck vendor-src/nccl-tests/build/all_reduce_perf -b 8 -e 1M -f 4 -w 1 -n 2 > "$OUT/engine/sanitizer-nccltests.txt" 2>&1
echo "nccl-tests all_reduce under memcheck (API errors reported): $(grep -c 'cudaErrorNoKernelImageForDevice' "$OUT/engine/sanitizer-nccltests.txt") NCCL-internal API errors; $(grep -h 'ERROR SUMMARY' "$OUT/engine/sanitizer-nccltests.txt" | tail -1)"
# A memory error (exit 99) or any failed run under memcheck fails this step.
compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 $B bench nccl --op all -b 8 -e 1M -f 4 -w 1 -n 2 --no-judge --out "$OUT/engine/san" > "$OUT/engine/sanitizer-nccl.txt" 2>&1
code=$?
echo "bench nccl under memcheck: exit $code (want 0); $(grep -h 'ERROR SUMMARY' "$OUT/engine/sanitizer-nccl.txt" | tail -1)"; [ $code -eq 0 ] || rc=1
compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 $B bench copy --size 16M -n 2 -w 1 --no-judge --out "$OUT/engine/san2" > "$OUT/engine/sanitizer-copy.txt" 2>&1
code=$?
echo "bench copy under memcheck: exit $code (want 0); $(grep -h 'ERROR SUMMARY' "$OUT/engine/sanitizer-copy.txt" | tail -1)"; [ $code -eq 0 ] || rc=1

say "2. poisoned output"
$B bench nccl --op all_reduce,all_gather,broadcast -b 1K -e 1M -f 8 -n 2 -w 1 --inject-corruption --no-judge --out "$OUT/engine/poison" > "$OUT/engine/poison.txt" 2>&1
code=$?
grep -E "^ +[0-9]+ |Out of bounds" "$OUT/engine/poison.txt" | head -8
echo "exit $code (want 1)"; [ $code -eq 1 ] || rc=1

say "3. no NCCL"
$B bench nccl --nccl /nonexistent/libnccl.so.2 -b 8 -e 8 > "$OUT/engine/nolib.txt" 2>&1
code=$?; head -3 "$OUT/engine/nolib.txt"; echo "exit $code (want 2)"; [ $code -eq 2 ] || rc=1

say "4. GPU memory held by another process"
python3 -c "
import torch, time
free, total = torch.cuda.mem_get_info()
x = torch.empty(free - (2 << 30), dtype=torch.uint8, device='cuda')
open('$OUT/engine/held', 'w').write(str(x.numel()))
time.sleep(60)
" &
hog=$!
for _ in $(seq 1 60); do [ -f "$OUT/engine/held" ] && break; sleep 1; done
$B bench nccl -b 8 -e 1G -n 2 -w 1 --no-judge --out "$OUT/engine/busy" > "$OUT/engine/busy.txt" 2>&1
code=$?; grep -h "gdrcheck:" "$OUT/engine/busy.txt" | head -2; echo "exit $code (want 2)"; [ $code -eq 2 ] || rc=1
kill $hog; wait $hog 2>/dev/null

say "5. SIGINT mid-run"
$B bench nccl --op all -b 8 -e 4G -n 50 -w 5 --no-judge --out "$OUT/engine/int" > "$OUT/engine/int.txt" 2>&1 &
p=$!
sleep 8
kill -INT $p
wait $p
code=$?
python3 -c "
import json; r = json.load(open('$OUT/engine/int/results.json'))
print('results.json: complete=%s interrupted=%s collectives=%d rows=%d' % (r['complete'], r.get('interrupted'), len(r['measurements']), sum(len(x['rows']) for x in r['measurements'])))
"
echo "exit $code (want 130)"; [ $code -eq 130 ] || rc=1

say "6. SIGINT twice"
$B bench nccl --op all -b 8 -e 4G -n 50 -w 5 --no-judge --out "$OUT/engine/int2" > "$OUT/engine/int2.txt" 2>&1 &
p=$!
sleep 8
kill -INT $p
sleep 0.2
t0=$(date +%s.%N)
kill -INT $p 2>/dev/null
wait $p
code=$?
t1=$(date +%s.%N)
python3 -c "
import json; r = json.load(open('$OUT/engine/int2/results.json'))
print('results.json: valid JSON, complete=%s rows=%d' % (r['complete'], sum(len(x['rows']) for x in r['measurements'])))
" || rc=1
echo "exit $code (want 130), ended $(python3 -c "print('%.2f' % ($t1 - $t0))") s after the second SIGINT"; [ $code -eq 130 ] || rc=1
exit $rc
