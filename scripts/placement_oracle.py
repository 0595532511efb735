#!/usr/bin/env python3
"""Independent exact oracle for the expert-placement campaign (issue 20).

Reads the JSON lines written by

    MOE_PLACEMENT_CAMPAIGN=500 MOE_PLACEMENT_CAMPAIGN_OUT=/tmp/campaign.jsonl \
        cargo test --release -p expert-placement --test placement_campaign -- --nocapture

and solves every instance to proved optimality with a MILP (HiGHS through scipy.optimize.milp),
written here from the problem statement alone, not from the Rust code:

* z[e,k] = 1 when expert e has k replicas (exactly one k per expert);
* v[e,k,g] = 1 when GPU g holds a replica of e and e has k replicas: sum_g v[e,k,g] = k z[e,k],
  at most one replica of e per GPU (sum_k v[e,k,g] <= 1);
* every GPU holds exactly its S slots: sum_{e,k} v[e,k,g] = S;
* T >= sum_{e,k} (w_e / k) v[e,k,g] (no big-M: each replica's load is a constant); GPUs are
  identical, so their loads are sorted (symmetry breaking);
* minimize T.

(The first version of this oracle used x[e,g] with a big-M share u[e,g] >= w_e/k - w_e (1 - x);
its LP relaxation put no load anywhere, and HiGHS proved 1 of 22 open instances. This one's
relaxation spreads all the load.)

`--solver pairs` (instances with 2 slots per GPU only): the pairing model of `solve_pairs`,
an integer program over replica counts alone (Hall's condition on the sorted pairing), bisected
on the target; it settles most 2-slot instances in seconds, where the models above time out.

`--solver configs` (few experts on many GPUs): the configuration model of `solve_configs`, one
integer per set of S experts (how many GPUs hold exactly that set). Its bound is weak, so it
mostly finds placements without proving them; on the campaign it found placements below ours
on few-expert 3-slot instances that no other model or search of ours reaches.

Prints, for the instances whose optimum HiGHS proves within the time limit, the distribution of
plan / optimum, the number of exact plans, the worst case; and the plans that beat EPLB's global
plan or not. Usage: placement_oracle.py FILE [--time-limit SECONDS] [--max-experts E] [--max-gpus G]
[--json OUT]
"""

import argparse
import json
import sys

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix


def solve(loads, gpus, slots, upper, time_limit):
    """Proved optimum (or None) of one uniform instance.

    Variables: z[e,k] = 1 when expert e has k replicas; v[e,k,g] = 1 when GPU g holds a replica
    of e and e has k replicas (so the replica's load w_e / k is a constant coefficient: no big-M,
    and the LP relaxation already spreads all the load, which the earlier x/u model did not);
    T the maximum load.
    """
    E, G, S = len(loads), gpus, slots
    R = G * S
    kmax = min(G, R - E + 1)
    K = list(range(1, kmax + 1))
    nK = len(K)
    nz, nv = E * nK, E * nK * G
    n = nz + nv + 1
    iz = lambda e, k: e * nK + (k - 1)
    iv = lambda e, k, g: nz + (e * nK + (k - 1)) * G + g
    it = n - 1
    m = E + E * nK + E * G + G + G + max(G - 1, 0)
    a = lil_matrix((m, n))
    lo, hi = [], []
    r = 0
    for e in range(E):
        # one replica count per expert
        for k in K:
            a[r, iz(e, k)] = 1
        lo.append(1), hi.append(1)
        r += 1
    for e in range(E):
        for k in K:
            # k replicas on distinct GPUs when the count is k, none otherwise
            for g in range(G):
                a[r, iv(e, k, g)] = 1
            a[r, iz(e, k)] = -k
            lo.append(0), hi.append(0)
            r += 1
    for e in range(E):
        for g in range(G):
            # no two replicas of one expert on a GPU
            for k in K:
                a[r, iv(e, k, g)] = 1
            lo.append(0), hi.append(1)
            r += 1
    for g in range(G):
        # every slot holds a replica
        for e in range(E):
            for k in K:
                a[r, iv(e, k, g)] = 1
        lo.append(S), hi.append(S)
        r += 1
    for g in range(G):
        # T >= load of g
        a[r, it] = 1
        for e in range(E):
            for k in K:
                a[r, iv(e, k, g)] = -loads[e] / k
        lo.append(0), hi.append(np.inf)
        r += 1
    for g in range(G - 1):
        # identical GPUs: loads sorted (symmetry breaking)
        for e in range(E):
            for k in K:
                a[r, iv(e, k, g)] = loads[e] / k
                a[r, iv(e, k, g + 1)] = -loads[e] / k
        lo.append(0), hi.append(np.inf)
        r += 1
    c = np.zeros(n)
    c[it] = 1
    integrality = np.zeros(n)
    integrality[: nz + nv] = 1
    lb = np.zeros(n)
    ub = np.full(n, np.inf)
    ub[: nz + nv] = 1
    ub[it] = upper * (1 + 1e-9) + 1e-9
    res = milp(
        c,
        constraints=LinearConstraint(a.tocsr(), lo, hi),
        integrality=integrality,
        bounds=Bounds(lb, ub),
        options={"time_limit": time_limit, "mip_rel_gap": 1e-9, "disp": False},
    )
    if res.status == 0:
        return float(res.fun)
    return None


def pair_items(loads, counts):
    """The 2G replica loads of `counts`, with their experts, sorted ascending."""
    return sorted((loads[e] / c, e) for e, c in enumerate(counts) for _ in range(c))


def sorted_pairing_value(items):
    """Largest pair sum when the i-th lightest replica pairs with the i-th heaviest: the least
    possible largest pair sum of these replicas when two replicas of one expert may share a GPU."""
    n = len(items)
    return max(items[i][0] + items[n - 1 - i][0] for i in range(n // 2))


def conflict_free_pairing(items, limit):
    """A pairing of `items` with every pair sum at most `limit` and no pair of one expert, or None.

    Sorted pairing, then each same-expert pair is repaired by exchanging partners with another
    pair when both new pairs stay within `limit` (a search, not a proof: None only means it did
    not find one)."""
    n = len(items)
    pairs = [[items[i], items[n - 1 - i]] for i in range(n // 2)]
    for p in pairs:
        if p[0][1] != p[1][1]:
            continue
        for q in pairs:
            if q is p:
                continue
            for a, b in ((0, 0), (0, 1)):
                x, y = p[a], q[b]
                p2 = [y, p[1 - a]]
                q2 = [x, q[1 - b]]
                if (p2[0][1] != p2[1][1] and q2[0][1] != q2[1][1]
                        and p2[0][0] + p2[1][0] <= limit and q2[0][0] + q2[1][0] <= limit):
                    p[:], q[:] = p2, q2
                    break
            else:
                continue
            break
        else:
            return None
    return pairs


def solve_pairs(loads, gpus, lower, upper, time_limit):
    """Optimum of a uniform instance with two slots per GPU (`--solver pairs`), or None.

    With two slots, a placement is a pairing of the 2G replicas. Ignoring the rule that two
    replicas of one expert may not share a GPU, the least largest pair sum of a given multiset is
    the sorted pairing's (lightest with heaviest), and such a pairing with every sum at most T
    exists exactly when, for every replica load b above T/2, the replicas at least b are no more
    than the replicas at most T - b (Hall's condition; the neighbourhoods are nested). In the
    one-hot count variables x[e,k] both sides are linear, so "is there a count vector whose
    sorted pairing stays within T" is a small integer feasibility problem (E * kmax binaries, one
    constraint per candidate replica load). Bisection on T between the instance's certified
    bound and the plan, with each feasible answer's own sorted-pairing value as the new upper
    end, gives the relaxed optimum; it is a lower bound on the true optimum, and the true
    optimum when the relaxed counts admit a pairing without a same-expert pair
    (`conflict_free_pairing`). Returns (relaxed optimum's lower end, its upper end, realized):
    realized True when the upper end was realized without a same-expert pair, pairs: that
    realization as [[(load, expert), (load, expert)], ...] per GPU, or None.
    """
    import time

    E, G = len(loads), gpus
    R = 2 * G
    kmax = min(G, R - E + 1)
    if kmax < 1:
        return None
    K = list(range(1, kmax + 1))
    nK = len(K)
    n = E * nK
    vals = sorted({loads[e] / k for e in range(E) for k in K})
    start = time.monotonic()

    def feasible(t):
        """Counts whose sorted pairing stays within t, or None (a proof that none exists) or
        'timeout'."""
        big = [b for b in vals if b > t / 2]
        rows = 2 + len(big)
        a = lil_matrix((rows, n))
        lo, hi = [], []
        for e in range(E):
            for j, k in enumerate(K):
                a[0, e * nK + j] = k
        lo.append(R), hi.append(R)
        # one count per expert: a separate equality block below
        eq = lil_matrix((E, n))
        for e in range(E):
            for j in range(nK):
                eq[e, e * nK + j] = 1
        for r, b in enumerate(big, start=1):
            tol = 1e-12 * max(t, 1.0)
            for e in range(E):
                for j, k in enumerate(K):
                    v = loads[e] / k
                    coef = (k if v >= b - tol else 0) - (k if v <= t - b + tol else 0)
                    if coef:
                        a[r, e * nK + j] = coef
            lo.append(-np.inf), hi.append(0)
        a = a[: 1 + len(big)]
        left = time_limit - (time.monotonic() - start)
        if left <= 0:
            return "timeout"
        res = milp(
            np.zeros(n),
            constraints=[LinearConstraint(a.tocsr(), lo, hi),
                         LinearConstraint(eq.tocsr(), np.ones(E), np.ones(E))],
            integrality=np.ones(n),
            bounds=Bounds(np.zeros(n), np.ones(n)),
            options={"time_limit": left, "disp": False},
        )
        if res.status == 0:
            x = np.round(res.x).astype(int)
            return [K[j] for e in range(E) for j in range(nK) if x[e * nK + j]]
        if res.status == 2:  # infeasible: proved
            return None
        return "timeout"

    lo_t, hi_t, best = lower, None, None
    # First ask whether anything beats the plan at all (one problem settles most instances).
    t = upper * (1 - 1e-7)
    while True:
        got = feasible(t)
        if got == "timeout":
            return None
        if got is None:
            lo_t = max(lo_t, t)
        else:
            items = pair_items(loads, got)
            value = sorted_pairing_value(items)
            if hi_t is None or value < hi_t:
                hi_t, best = value, items
        top = hi_t if hi_t is not None else upper
        if top <= lo_t * (1 + 1e-7):
            break
        t = (lo_t + top) / 2 if hi_t is not None else (lo_t + upper) / 2
        if hi_t is None and t >= upper * (1 - 1e-7):
            break
    if hi_t is None:
        # Nothing below the plan's value: the relaxed optimum is at least it.
        return (lo_t, upper, True, None)
    pairs = conflict_free_pairing(best, hi_t * (1 + 1e-12))
    return (lo_t, hi_t, pairs is not None, pairs)


def solve_cpsat(loads, gpus, slots, upper, time_limit, workers):
    """Proved optimum (or None) of one uniform instance with OR-Tools CP-SAT (`--solver cpsat`).

    The model of `solve` with integer coefficients: each replica load w_e / k is scaled so that
    the largest load is 2^40 and rounded, so the optimum it proves is the true optimum within
    S / 2^41 of the largest load (relative 1e-11 or less), far below the 1e-6 at which the
    report calls a plan exact. The returned value is recomputed from the optimal assignment in
    floating point.
    """
    from ortools.sat.python import cp_model

    E, G, S = len(loads), gpus, slots
    R = G * S
    kmax = min(G, R - E + 1)
    K = range(1, kmax + 1)
    top = max(loads) if max(loads) > 0 else 1.0
    scale = float(1 << 40) / top
    q = {(e, k): int(round(loads[e] / k * scale)) for e in range(E) for k in K}
    m = cp_model.CpModel()
    z = {(e, k): m.NewBoolVar("") for e in range(E) for k in K}
    v = {(e, k, g): m.NewBoolVar("") for e in range(E) for k in K for g in range(G)}
    for e in range(E):
        m.AddExactlyOne(z[e, k] for k in K)
        for k in K:
            m.Add(sum(v[e, k, g] for g in range(G)) == k * z[e, k])
        for g in range(G):
            m.AddAtMostOne(v[e, k, g] for k in K)
    cap = int(upper * scale * (1 + 1e-9)) + S + 1
    t = m.NewIntVar(0, cap, "T")
    load = []
    for g in range(G):
        m.Add(sum(v[e, k, g] for e in range(E) for k in K) == S)
        lg = m.NewIntVar(0, cap, "")
        m.Add(lg == sum(q[e, k] * v[e, k, g] for e in range(E) for k in K))
        m.Add(t >= lg)
        load.append(lg)
    for g in range(G - 1):
        # identical GPUs: loads sorted (symmetry breaking)
        m.Add(load[g] >= load[g + 1])
    m.Minimize(t)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    count = [sum(k for k in K if solver.Value(z[e, k])) for e in range(E)]
    best = 0.0
    for g in range(G):
        lg = sum(loads[e] / count[e] for e in range(E) for k in K if solver.Value(v[e, k, g]))
        best = max(best, lg)
    return best if status == cp_model.OPTIMAL else ("feasible", best)


def solve_configs(loads, gpus, slots, upper, time_limit, max_configs=5000):
    """Few experts on many identical GPUs: the configuration model. A GPU's contents are one
    set of `slots` distinct experts; n[t] GPUs hold set t, z[e,k] = 1 when expert e has k
    replicas (its count is the number of GPUs whose set contains it), y[t] = 1 when set t is
    used, and T is at least the load of every used set (a big-M row per set:
    sum_{e in t} sum_k (w_e / k) z[e,k] <= T + M (1 - y[t]), n[t] <= G y[t]).

    The sets number C(E, S), so this is small where the GPU-indexed models are large (7
    experts on 22 GPUs of 3 slots: 35 sets). Its LP bound is weak (the big-M rows), so it rarely
    proves an optimum, but HiGHS finds good placements in seconds: returns the proved optimum,
    ("feasible", value) for an unproved placement (checked here from its sets), or None.
    """
    from itertools import combinations
    from math import comb
    E, G, S = len(loads), gpus, slots
    if comb(E, S) > max_configs:
        return None
    sets = list(combinations(range(E), S))
    C, K = len(sets), G
    n_at, y_at = 0, C
    z_at = 2 * C
    t_at = z_at + E * K
    N = t_at + 1
    big_m = float(sum(loads))
    A = lil_matrix((1 + 2 * E + 2 * C, N))
    lo, hi = [], []
    r = 0
    for t in range(C):
        A[r, n_at + t] = 1
    lo.append(G); hi.append(G); r += 1
    for e in range(E):
        for t, members in enumerate(sets):
            if e in members:
                A[r, n_at + t] = 1
        for k in range(1, K + 1):
            A[r, z_at + e * K + k - 1] = -k
        lo.append(0); hi.append(0); r += 1
        for k in range(1, K + 1):
            A[r, z_at + e * K + k - 1] = 1
        lo.append(1); hi.append(1); r += 1
    for t, members in enumerate(sets):
        A[r, n_at + t] = 1
        A[r, y_at + t] = -G
        lo.append(-np.inf); hi.append(0); r += 1
        for e in members:
            for k in range(1, K + 1):
                A[r, z_at + e * K + k - 1] = loads[e] / k
        A[r, t_at] = -1
        A[r, y_at + t] = big_m
        lo.append(-np.inf); hi.append(big_m); r += 1
    cost = np.zeros(N)
    cost[t_at] = 1
    integrality = np.ones(N)
    integrality[t_at] = 0
    lb = np.zeros(N)
    ub = np.ones(N)
    ub[n_at:n_at + C] = G
    ub[t_at] = upper * (1 + 1e-7)
    res = milp(cost, constraints=LinearConstraint(A.tocsr(), lo, hi), integrality=integrality,
               bounds=Bounds(lb, ub), options={"time_limit": time_limit, "mip_rel_gap": 1e-9})
    if res.x is None:
        return None
    n = np.round(res.x[n_at:n_at + C]).astype(int)
    count = [sum(int(n[t]) for t, members in enumerate(sets) if e in members) for e in range(E)]
    assert sum(n) == G and min(count) >= 1, "configuration model: invalid placement"
    value = max(sum(loads[e] / count[e] for e in members)
                for t, members in enumerate(sets) if n[t] > 0)
    return value if res.status == 0 else ("feasible", value)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--json", help="write per-instance results here")
    p.add_argument("--max-experts", type=int, default=1 << 30,
                   help="skip instances with more experts (the MILP grows as E * G * G)")
    p.add_argument("--max-gpus", type=int, default=1 << 30, help="skip instances with more GPUs")
    p.add_argument("--solver", choices=["highs", "cpsat", "pairs", "configs"], default="highs",
                   help="HiGHS through SciPy (default), OR-Tools CP-SAT (pip install ortools), "
                        "the two-slot pairing model (only instances with 2 slots per GPU), or the "
                        "configuration model (few experts: at most 5,000 sets of S experts)")
    p.add_argument("--workers", type=int, default=2, help="CP-SAT search workers")
    p.add_argument("--only-open", action="store_true",
                   help="skip the instances whose plan is at its bound (known optimum)")
    args = p.parse_args()
    cases = [json.loads(line) for line in open(args.file)]
    cases = [c for c in cases
             if len(c["loads"]) <= args.max_experts and c["gpus"] <= args.max_gpus
             and not (args.only_open and c["plan"] <= c["lower_bound"] * (1 + 1e-9))
             and (args.solver != "pairs" or c["slots_per_gpu"] == 2)]
    out, ratios, worst = [], [], (1.0, None)
    exact = unknown = 0
    beaten = []  # (plan / oracle's better plan, case) where the oracle found a better plan
    for c in cases:
        plan, lb = c["plan"], c["lower_bound"]
        if plan <= lb * (1 + 1e-9):
            opt = lb
        elif args.solver == "pairs":
            got = solve_pairs(c["loads"], c["gpus"], lb, plan, args.time_limit)
            if got is None:
                opt = None
            elif plan <= got[0] * (1 + 1e-6):
                opt = plan
            elif got[2]:
                opt = got[1]
            else:
                opt = None
                print(f"case {c['case']}: the relaxed optimum {got[1]} (plan {plan}) could not be "
                      "realized without two replicas of one expert on a GPU", file=sys.stderr)
        elif args.solver == "configs":
            opt = solve_configs(c["loads"], c["gpus"], c["slots_per_gpu"], plan, args.time_limit)
        else:
            opt = (solve_cpsat(c["loads"], c["gpus"], c["slots_per_gpu"], plan, args.time_limit,
                               args.workers)
                   if args.solver == "cpsat"
                   else solve(c["loads"], c["gpus"], c["slots_per_gpu"], plan, args.time_limit))
        rec = {"case": c["case"], "shape": c["shape"], "experts": len(c["loads"]),
               "gpus": c["gpus"], "slots_per_gpu": c["slots_per_gpu"], "plan": plan,
               "lower_bound": lb, "optimum": opt, "eplb_global": c["eplb_global"]}
        out.append(rec)
        if isinstance(opt, tuple):
            found = opt[1]
            rec["optimum"] = None
            rec["oracle_best_found"] = found
            if found < plan * (1 - 1e-6):
                beaten.append((case_ratio := plan / found, c["case"]))
                print(f"case {c['case']}: the oracle found {found} below the plan {plan} "
                      f"(plan/found {case_ratio:.6f}) without proving it optimal", file=sys.stderr)
            opt = None
        if opt is None:
            unknown += 1
            print(f"case {c['case']}: optimum not proved in {args.time_limit} s "
                  f"(plan/bound {plan / lb:.5f})", file=sys.stderr)
            continue
        if plan < opt * (1 - 1e-6):
            print(f"case {c['case']}: plan {plan} BELOW the MILP optimum {opt}: oracle or model bug",
                  file=sys.stderr)
        ratio = plan / opt if opt > 0 else 1.0
        ratios.append(ratio)
        if ratio <= 1 + 1e-6:
            exact += 1
        if ratio > worst[0]:
            worst = (ratio, rec)
        print(f"case {c['case']}: E={rec['experts']} G={rec['gpus']} S={rec['slots_per_gpu']} "
              f"{c['shape']}: plan/optimum {ratio:.6f}", file=sys.stderr)
    known = len(ratios)
    q = np.quantile(ratios, [0.5, 0.95, 0.99, 1.0]) if ratios else []
    print(json.dumps({
        "instances": len(cases), "optimum_known": known, "exact": exact,
        "exact_share": exact / known if known else None,
        "within_1_percent": sum(r <= 1.01 for r in ratios),
        "ratio_median_p95_p99_max": [float(x) for x in q],
        "unknown": unknown, "worst": worst[1],
        "unknown_but_oracle_found_better": len(beaten),
        "worst_plan_over_oracle_found": max(beaten)[0] if beaten else None,
    }, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
