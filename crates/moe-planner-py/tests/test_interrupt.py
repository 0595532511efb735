"""Issue 20 item 4: Ctrl-C interrupts a call within 100 ms, and inputs too large to hold are
refused with ``TooLargeError`` before allocation, never by killing the interpreter."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import moe_planner
from moe_planner import _native
from moe_planner.eplb import rebalance_experts

# How late KeyboardInterrupt may come after the signal (the native side polls every 50 ms).
LATENCY_S = 0.1


def test_ctrl_c_interrupts_a_running_call_within_100_ms():
    sent = []

    def ctrl_c():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.2, ctrl_c)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        # A native call that surely outlives the signal: it would take 5 s.
        _native._sleep_for_tests(5.0)
    caught = time.monotonic()
    timer.join()
    assert len(sent) == 1
    assert caught - sent[0] < LATENCY_S, f"KeyboardInterrupt {caught - sent[0]:.3f} s after Ctrl-C"
    # The module still works after an interrupted call.
    assert moe_planner.place([[2.0, 1.0]], 2, 1).max_gpu_load.tolist() == [2.0]


def test_an_interrupted_placement_raises_keyboard_interrupt():
    """A real planner input that runs for seconds (4,096 log-normal experts on 1,024 GPUs x 8
    slots: about 6 s per layer on 2 cores): interrupted after 0.5 s. Skipped once the planner
    finishes it sooner. (The issue's 9 experts on 16 x 2, 44 s then, now plans in 0.2 s.)"""
    loads = np.random.default_rng(0).lognormal(0.0, 1.0, (1, 4096))
    fired = []

    def handler(signum, frame):
        fired.append(time.monotonic())
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        moe_planner.place(loads, 1024, 8)
        finished = True
    except KeyboardInterrupt:
        finished = False
        caught = time.monotonic()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if finished:
        pytest.skip("this input now plans in under 0.5 s")
    assert caught - fired[0] < LATENCY_S


def test_eplb_padded_map_too_large_is_refused_not_fatal():
    # 16,384 experts with one hot on 32,768 GPUs: EPLB's logical_to_physical_map would be
    # 16,384 x 16,385 int64 (2 GiB); this used to abort the interpreter out of memory.
    weight = np.ones((1, 16_384))
    weight[0, 0] = 1e9
    assert issubclass(moe_planner.TooLargeError, ValueError)
    with pytest.raises(moe_planner.TooLargeError, match="logical_to_physical_map"):
        rebalance_experts(weight, 32_768, 1, 1, 32_768)


def test_place_too_many_plan_entries_is_refused_before_planning():
    start = time.monotonic()
    with pytest.raises(moe_planner.TooLargeError, match="plan entries"):
        moe_planner.place(np.ones((17, 1)), 1 << 24, 1)
    assert time.monotonic() - start < 1.0


def test_place_padded_map_too_large_is_refused_not_fatal():
    # Issue 20: 16,384 experts with one hot expert on 32,768 GPUs. The plan gives the hot expert
    # 16,385 replicas, so the padded logical_to_physical_map would be 16,384 x 16,385; refused
    # before it is allocated (it used to abort the interpreter out of memory).
    loads = np.ones((1, 16_384))
    loads[0, 0] = 1e9
    with pytest.raises(moe_planner.TooLargeError, match="logical_to_physical_map"):
        moe_planner.place(loads, 32_768, 1)
