#!/bin/bash
# Quiet-machine timings (docs/performance.md, "On a quiet machine"): the all-to-all probe, the
# 58-layer rebalance, the traffic planner's 58 layers and EPLB's numpy port against ours.
# Prepare the bundle on the development machine, then run this from the repository root on the
# quiet machine with OUT set to a folder for the log:
#   cargo build --release -p moe-planner-benches --example alltoall_probe
#   cargo build --release -p expert-placement --example rebalance_timing
#   cargo test --release -p traffic-placement --test traffic_targets --no-run
#   copy the three binaries (debug info stripped) to target/device/bin, the last as traffic_targets;
#   (cd crates/moe-planner-py && maturin build --release -o ../../target/device/wheels)
exec > >(tee "$OUT/log2.txt") 2>&1
B=target/device/bin
lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz" ; uptime
echo "== alltoall optimal (median of repeats, s)"
for k in zipf0.8 zipf1.2 deepseek uniform; do
  $B/alltoall_probe $k 64 1 optimal 300 | tail -1
  $B/alltoall_probe $k 256 1 optimal 30 | tail -1
done
for k in zipf1.2 deepseek; do /usr/bin/time -f "peak %M KB" $B/alltoall_probe $k 2048 1 optimal 3 | tail -1; done
timeout 60 $B/alltoall_probe uniform 2048 1 optimal 1 | tail -1
echo "== rebalance 58 layers"
for t in 1 2; do echo "threads $t"; RAYON_NUM_THREADS=$t $B/rebalance_timing 58 7 | tail -3; done
echo "node, 2 threads"; RAYON_NUM_THREADS=2 $B/rebalance_timing 58 7 node | grep -v digest | tail -3
echo "== traffic 58 layers"
for t in 1 2; do TRAFFIC_THREADS=$t timeout 120 $B/traffic_targets --ignored fifty_eight --nocapture 2>&1 | grep -E "58 layers|test result"; done
echo "== EPLB numpy port vs ours"
pip install -q --no-index --no-deps --target /tmp/mp target/device/wheels/*.whl
echo "all cores"; PYTHONPATH=/tmp/mp timeout 100 python3 crates/moe-planner-py/bench/bench_eplb_numpy.py
echo "RAYON_NUM_THREADS=2"; RAYON_NUM_THREADS=2 PYTHONPATH=/tmp/mp timeout 100 python3 crates/moe-planner-py/bench/bench_eplb_numpy.py
