//! What an `Ok` of each entry point must satisfy.

use super::*;

/// `par` satisfies Eq. 11–18 for `model` on `gpus` GPUs in HB domains of `k`, checked here
/// independently of `Parallelization::validate`.
pub(crate) fn check_eq_11_to_18(
    par: &Parallelization,
    model: &GptModel,
    gpus: u64,
    k: u64,
) -> Check {
    let product = par
        .tp
        .checked_mul(par.pp)
        .and_then(|x| x.checked_mul(par.dp));
    let hb = par
        .tp_hb
        .checked_mul(par.pp_hb)
        .and_then(|x| x.checked_mul(par.dp_hb));
    let divides = |a: u64, b: u64| b != 0 && a % b == 0;
    let ok = product == Some(gpus)
        && hb == Some(k)
        && divides(gpus, k)
        && divides(par.tp, par.tp_hb)
        && divides(par.pp, par.pp_hb)
        && divides(par.dp, par.dp_hb)
        && divides(par.global_batch, par.dp)
        && divides(par.global_batch / par.dp, par.micro_batch)
        && divides(model.layers, par.pp)
        && divides(model.layers / par.pp, par.interleave)
        && divides(model.hidden, par.tp)
        && divides(model.seq_len, par.tp)
        && divides(model.heads, par.tp);
    if ok {
        Ok(())
    } else {
        fail(format!(
            "Ok configuration {par:?} breaks Eq. 11-18 for N = {gpus}, K = {k}, {model:?}"
        ))
    }
}

pub(crate) fn check_terms(t: &IterationTerms) -> Check {
    finite_json(t)?;
    positive_finite("iteration time", t.iteration_time_s)?;
    let parts = [
        t.microbatch_compute_s,
        t.bubble_compute_s,
        t.bubble_comm_s,
        t.last_stage_compute_s,
        t.last_stage_tp_comm_s,
        t.last_stage_pp_comm_s,
        t.sync_s,
        t.latency_s,
    ];
    for x in parts {
        non_negative_finite("iteration term", x)?;
    }
    let sum: f64 = parts[1..].iter().sum();
    if (sum - t.iteration_time_s).abs() > 1e-9 * t.iteration_time_s {
        return fail(format!("terms sum to {sum}, total {}", t.iteration_time_s));
    }
    Ok(())
}

/// What a search or sweep returns must satisfy: every configuration passes Eq. 11–18, fits in
/// memory, has a positive finite time equal to a fresh evaluation, and the list is sorted.
pub(crate) fn check_search(
    im: &IterationModel,
    gpus: u64,
    batch: u64,
    keep: usize,
    r: &SearchResult,
) -> Check {
    finite_json(r)?;
    let Some(first) = r.ranked.first() else {
        return fail("Ok search with an empty ranking");
    };
    if *first != r.best || r.ranked.len() > keep.max(1) || r.evaluated < r.ranked.len() as u64 {
        return fail(format!(
            "best/ranked/evaluated inconsistent: {} ranked, keep {keep}, {} evaluated",
            r.ranked.len(),
            r.evaluated
        ));
    }
    let k = im.system().hb_domain;
    for c in &r.ranked {
        c.parallelization
            .validate(im.model(), gpus, k)
            .map_err(|e| format!("ranked {:?} fails Eq. 11-18: {e}", c.parallelization))?;
        check_eq_11_to_18(&c.parallelization, im.model(), gpus, k)?;
        if c.parallelization.global_batch != batch {
            return fail("ranked configuration of another batch");
        }
        check_terms(&c.terms)?;
        if !c.fits_in_memory(im.system()) {
            return fail(format!(
                "ranked configuration needs {} bytes",
                c.memory.total_bytes
            ));
        }
        let again = RankedConfig::evaluate(im, gpus, c.parallelization)
            .map_err(|e| format!("ranked configuration does not evaluate: {e}"))?;
        if again != *c {
            return fail("ranked configuration differs from its evaluation");
        }
    }
    for w in r.ranked.windows(2) {
        if w[0].terms.iteration_time_s > w[1].terms.iteration_time_s {
            return fail("ranking not sorted by time");
        }
    }
    Ok(())
}

pub(crate) fn check_sweep_point(model: &GptModel, p: &SweepPoint) -> Check {
    finite_json(p)?;
    positive_finite("sweep iteration time", p.iteration_time_s)?;
    positive_finite("sweep ideal time", p.ideal_time_s)?;
    non_negative_finite("relative performance", p.relative_performance)?;
    check_eq_11_to_18(&p.best, model, p.gpus, p.hb_domain)
}

/// A traffic matrix is square (both GPUs below `N`, never equal), sorted without repeats, with
/// finite non-negative bytes; `validate` agrees; the summary adds up.
pub(crate) fn check_traffic(t: &JobTraffic) -> Check {
    t.validate()
        .map_err(|e| format!("job_traffic output invalid: {e}"))?;
    finite_json(t)?;
    let mut previous = None;
    for e in &t.entries {
        if e.src >= t.gpus || e.dst >= t.gpus || e.src == e.dst {
            return fail(format!(
                "entry {} -> {} outside the {} x {} matrix",
                e.src, e.dst, t.gpus, t.gpus
            ));
        }
        if previous >= Some((e.src, e.dst)) {
            return fail("entries not sorted");
        }
        previous = Some((e.src, e.dst));
        for &b in &e.bytes {
            non_negative_finite("traffic bytes", b)?;
        }
        if t.get(e.src, e.dst) != Some(e) {
            return fail("get does not find an entry");
        }
    }
    let s = t
        .summary()
        .map_err(|e| format!("valid traffic has no summary: {e}"))?;
    check_summary(t, &s)?;
    round_trip(t)
}

pub(crate) fn check_summary(t: &JobTraffic, s: &TrafficSummary) -> Check {
    finite_json(s)?;
    let total = s.hb_bytes + s.network_bytes;
    if (total - s.total_bytes).abs() > 1e-9 * s.total_bytes
        || s.cross_rail_network_bytes > s.network_bytes
        || !(0.0..=1.0).contains(&s.idle_pair_fraction)
        || s.busy_pairs != t.entries.len() as u64
        || s.by_kind.len() != TrafficKind::ALL.len()
    {
        return fail(format!("summary does not add up: {s:?}"));
    }
    let shares: f64 = s.by_kind.iter().map(|k: &KindShare| k.share).sum();
    if s.total_bytes > 0.0 && (shares - 1.0).abs() > 1e-9 {
        return fail(format!("shares sum to {shares}"));
    }
    Ok(())
}

/// Each family of groups covers every GPU of the job exactly once.
pub(crate) fn check_partition(what: &str, groups: &[Vec<u64>], gpus: u64) -> Check {
    let mut seen = BTreeSet::new();
    for &g in groups.iter().flatten() {
        if g >= gpus || !seen.insert(g) {
            return fail(format!("{what} groups repeat or leave the job: GPU {g}"));
        }
    }
    if seen.len() as u64 != gpus {
        return fail(format!("{what} groups cover {} of {gpus} GPUs", seen.len()));
    }
    Ok(())
}

pub(crate) fn check_mapping(map: &RankMapping, probes: &[u64]) -> Check {
    let n = map.gpus();
    let c = *map.parallelization();
    check_partition("tensor", &map.tensor_groups(), n)?;
    check_partition("data", &map.data_groups(), n)?;
    check_partition("pipeline", &map.pipeline_groups(), n)?;
    let mut placed = BTreeSet::new();
    for t in 0..c.tp {
        for d in 0..c.dp {
            for p in 0..c.pp {
                let g = map
                    .gpu(t, d, p)
                    .ok_or_else(|| format!("rank ({t}, {d}, {p}) has no GPU"))?;
                placed.insert(g);
            }
        }
    }
    if placed.len() as u64 != n || placed.last().is_some_and(|&g| g >= n) {
        return fail("ranks do not map one-to-one onto the GPUs");
    }
    for &g in probes {
        let inside = g < n;
        if map.domain_of(g).is_some() != inside || map.rail_of(g).is_some() != inside {
            return fail(format!("domain_of/rail_of of GPU {g} in a job of {n}"));
        }
        if inside && map.domain_of(g) != Some(g / map.hb_domain()) {
            return fail("domain_of");
        }
        let _ = map.gpu(g, g, g);
    }
    if let Some(e) = map.experts() {
        check_partition("expert", &map.expert_groups(), n)?;
        check_partition("esp", &map.esp_groups(), n)?;
        let placement: ExpertPlacement = map
            .expert_placement()
            .ok_or("experts without a placement")?;
        let case = match (
            placement.moe_block_in_one_domain,
            placement.esp_in_one_domain,
            placement.ep_in_one_domain,
        ) {
            (true, _, _) => 1,
            (_, true, _) => 2,
            (_, _, true) => 3,
            _ => 4,
        };
        if placement.case != case || e.ep == 0 {
            return fail(format!("placement {placement:?}"));
        }
    } else if map.expert_placement().is_some() || !map.expert_groups().is_empty() {
        return fail("expert groups without experts");
    }
    round_trip(map)
}

pub(crate) fn check_counts(c: &FabricCounts, gpus: u64, radix: u64) -> Check {
    finite_json(c)?;
    non_negative_finite("fabric cost", c.cost_usd)?;
    let t = u64::from(c.tiers);
    let ports = (2 * t).saturating_sub(1).checked_mul(gpus);
    if c.transceivers != 2 * c.links
        || Some(c.switch_ports) != ports
        || c.links != t * gpus
        || c.switches != c.switch_ports.div_ceil(radix)
    {
        return fail(format!("counts do not add up: {c:?}"));
    }
    Ok(())
}

pub(crate) fn check_rows(runs: &[PublishedRun], rows: &[AccuracyRow]) -> Check {
    finite_json(&rows)?;
    if rows.len() != runs.len() {
        return fail("one row per run");
    }
    for (r, row) in runs.iter().zip(rows) {
        positive_finite("predicted time", row.predicted_s)?;
        let expected = row.predicted_s / r.measured_s - 1.0;
        if row.error_vs_measured != expected || row.measured_s != r.measured_s {
            return fail(format!("row {row:?} of run {r:?}"));
        }
    }
    let mae = mean_absolute_error(rows).map_err(|e| format!("finite rows, no mean: {e}"))?;
    non_negative_finite("mean absolute error", mae)
}

pub(crate) fn check_fitted(base: &ComputeModel, fitted: &ComputeModel) -> Check {
    fitted
        .validate()
        .map_err(|e| format!("calibrated model invalid: {e}"))?;
    let in_box = (0.3..=1.0).contains(&fitted.gemm_efficiency)
        && (1.0..=4.0).contains(&fitted.attention_slowdown)
        && (0.0..=20000.0).contains(&fitted.half_efficiency_hidden);
    if !in_box || fitted.bytes_per_param != base.bytes_per_param {
        return fail(format!("calibration left its box: {fitted:?}"));
    }
    Ok(())
}
