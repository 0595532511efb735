#!/bin/bash
# Run from the repository root on the lent machine with OUT set, after copying into target/device/bin
# (debug info stripped): rebalance_timing_{old,new} (cargo build --release -p expert-placement
# --example rebalance_timing, at the old commit and at HEAD) and traffic_targets_{old,new}
# (cargo test --release -p traffic-placement --test traffic_targets --no-run).
# Quiet-machine timings after this session's merges: the 58-layer rebalance and the traffic
# planner's 58 layers, old (1cf3413) and new binaries alternating on the same machine.
exec > >(tee "$OUT/log3.txt") 2>&1
B=target/device/bin
lscpu | grep -E "Model name|^CPU\(s\)" ; uptime
echo "== rebalance 58 layers (medians of 7 per tolerance)"
for t in 2 1 4; do for r in 1 2; do for v in old new; do
  echo "threads $t $v run $r"; RAYON_NUM_THREADS=$t $B/rebalance_timing_$v 58 7 | grep -v digest | tail -3
done; done; done
echo "== node rebalance, 2 threads"
for v in old new; do echo "$v"; RAYON_NUM_THREADS=2 $B/rebalance_timing_$v 58 7 node | grep -v digest | tail -3; done
echo "== traffic 58 layers"
for t in 2 4; do for r in 1 2 3; do for v in old new; do
  echo "threads $t $v run $r"; TRAFFIC_THREADS=$t timeout 100 $B/traffic_targets_$v --ignored fifty_eight --nocapture 2>&1 | grep -E "58 layers|test result"
done; done; done
uptime
