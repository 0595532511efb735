#!/bin/bash
# The quiet-machine timings of 2026-11-27 (docs/performance.md, top; output in
# examples/data/measured/device_timings_2026-11-27.txt). Build on the development machine, at the
# old commit (suffix _main) and at the new one (suffix _new), and copy stripped to target/device/bin:
#   cargo build --release -p moe-planner-benches --example alltoall_probe
#   cargo build --release -p expert-placement --example rebalance_timing
#   cargo test --release -p traffic-placement --test traffic_targets --no-run   (as traffic_targets_*)
# Then run from the repository root with OUT set: `scripts/device_timings_2026-11-27.sh 1`, then
# `... 2`, then `... 3` (with the binaries of part 3).
part=${1:-1}
if [ "$part" = 1 ]; then
exec > >(tee "$OUT/log5.txt") 2>&1
B=target/device/bin
lscpu | grep -E "Model name|^CPU\(s\)" ; uptime
echo "== alltoall n=64 (median of 3000) and n=256 (median of 60), old/new alternated"
for r in 1 2; do for k in zipf0.8 zipf1.2 deepseek uniform; do for v in main new; do
  echo "$v $k 64 r$r: $($B/alltoall_probe_$v $k 64 1 optimal 3000 | tail -1)"
done; done; done
for k in zipf0.8 zipf1.2 deepseek uniform; do for v in main new; do
  echo "$v $k 256: $($B/alltoall_probe_$v $k 256 1 optimal 60 | tail -1)"
done; done
echo "== alltoall n=2048, one call per process"
for k in zipf1.2 deepseek; do for v in main new; do
  echo "$v $k 2048:"; /usr/bin/time -f "peak %M KB wall %e s" $B/alltoall_probe_$v $k 2048 1 optimal 1 | tail -1
done; done
for s in 1 2; do echo "new uniform 2048 seed $s:"; /usr/bin/time -f "peak %M KB wall %e s" timeout 40 $B/alltoall_probe_new uniform 2048 $s optimal 1 | tail -1; done
echo "== rebalance 58 layers (medians of 7 per tolerance)"
for r in 1 2 3; do for v in main new; do
  echo "threads 2 $v run $r"; RAYON_NUM_THREADS=2 $B/rebalance_timing_$v 58 7 | grep -v digest | tail -3
done; done
for t in 1 4; do for v in main new; do echo "threads $t $v"; RAYON_NUM_THREADS=$t $B/rebalance_timing_$v 58 7 | grep -v digest | tail -3; done; done
for v in main new; do echo "node, 2 threads, $v"; RAYON_NUM_THREADS=2 $B/rebalance_timing_$v 58 7 node | grep -v digest | tail -3; done
echo "== traffic 58 layers"
for r in 1 2 3; do for v in main new; do
  echo "threads 2 $v run $r"; TRAFFIC_THREADS=2 timeout 60 $B/traffic_targets_$v --ignored fifty_eight --nocapture 2>&1 | grep -E "58 layers|test result"
done; done
for v in main new; do echo "threads 4 $v"; TRAFFIC_THREADS=4 timeout 60 $B/traffic_targets_$v --ignored fifty_eight --nocapture 2>&1 | grep -E "58 layers|test result"; done
uptime
elif [ "$part" = 2 ]; then
exec > >(tee "$OUT/log6.txt") 2>&1
B=target/device/bin
uptime
for r in 1 2 3 4 5; do for k in zipf0.8 zipf1.2 deepseek; do for v in main new; do
  echo "$v $k 64 r$r: $(taskset -c 3 $B/alltoall_probe_$v $k 64 1 optimal 3000 | tail -1 | grep -o 'median [0-9.]* us')"
done; done; done
for r in 1 2 3 4; do for v in main new; do
  echo "rebalance threads 2 $v run $r"; RAYON_NUM_THREADS=2 taskset -c 4,5 $B/rebalance_timing_$v 58 7 | grep -v digest | tail -3
done; done
uptime
else
# Part 3 (a third call, on a fresh machine): *_mid = the first call's *_new (41ff88b), *_new =
# 15fd26c.
exec > >(tee "$OUT/log7.txt") 2>&1
B=target/device/bin
lscpu | grep -E "Model name|^CPU\(s\)" ; uptime
echo "== alltoall n=2048 uniform, one call per process"
for r in 1 2; do for s in 1 2; do for v in mid new; do
  echo "$v uniform 2048 seed $s r$r:"; /usr/bin/time -f "peak %M KB wall %e s" timeout 40 $B/alltoall_probe_$v uniform 2048 $s optimal 1 | tail -1
done; done; done
echo "== alltoall n=64 (median of 3000)"
for r in 1 2; do for k in zipf0.8 zipf1.2 deepseek; do for v in mid new; do
  echo "$v $k 64 r$r: $($B/alltoall_probe_$v $k 64 1 optimal 3000 | tail -1 | grep -o 'median [0-9.]* us.*')"
done; done; done
echo "== rebalance 58 layers, 2 threads (medians of 7 per tolerance)"
for r in 1 2 3 4; do for v in mid new; do
  echo "$v run $r"; RAYON_NUM_THREADS=2 $B/rebalance_timing_$v 58 7 | grep -v digest | tail -3
done; done
for r in 1 2 3; do for v in mid new; do
  echo "$v pinned run $r"; RAYON_NUM_THREADS=2 taskset -c 4,5 $B/rebalance_timing_$v 58 7 | grep -v digest | tail -3
done; done
uptime
fi
