//! A valid JSON document of every public `Deserialize` type, and edits of documents.

use super::*;

/// The JSON extremes of `moe_fuzz` and, for wrong types, `null`, a string and an array.
pub(crate) fn json_extremes() -> Vec<Value> {
    let mut values = moe_fuzz::json_extremes();
    values.extend([Value::Null, json!("x"), json!([])]);
    values
}

/// A valid value of every public `Deserialize` type, as JSON, with the check its parse must pass.
pub(crate) struct Template {
    pub name: &'static str,
    pub json: Value,
    pub parse: fn(Value) -> Check,
}

/// Parses `v` as `T`; an `Ok` must be finite and pass `valid`.
pub(crate) fn parse_as<T: DeserializeOwned + Serialize>(v: Value, valid: fn(&T) -> Check) -> Check {
    let parsed = serde_json::from_value::<T>(v);
    tally("rail_network::serde", &parsed);
    match parsed {
        Ok(x) => {
            finite_json(&x)?;
            valid(&x)
        }
        Err(_) => Ok(()),
    }
}

pub(crate) fn no_check<T>(_: &T) -> Check {
    Ok(())
}

pub(crate) fn templates() -> &'static [Template] {
    static T: OnceLock<Vec<Template>> = OnceLock::new();
    T.get_or_init(build_templates)
}

fn build_templates() -> Vec<Template> {
    let model = GptModel {
        heads: 8,
        hidden: 64,
        layers: 4,
        seq_len: 32,
        vocab: 1000,
    };
    let par = Parallelization::with_default_mapping(2, 2, 2, 1, 4, 2, 4).unwrap();
    let expert = ExpertParallelism {
        ep: 2,
        esp: 2,
        moe_every: 1,
        top_k: 1,
    };
    let map = RankMapping::new(&model, &par, 8, 4)
        .unwrap()
        .with_experts(expert)
        .unwrap();
    let traffic = job_traffic(&map, CollectiveAlgorithm::Hierarchical);
    let system = system_preset("dgx-a100").unwrap();
    let im = IterationModel::new(model, system, ComputeModel::paper()).unwrap();
    let found = search(&im, 8, 8, &SearchOptions::default()).unwrap();
    let params = FabricParams::new(64, 8, 8);
    let ctx = FailureContext {
        gpus_per_server: 8,
        optical_reconfiguration: false,
    };
    let run = table4_runs().unwrap().remove(1);
    let rows = accuracy_table(std::slice::from_ref(&run), &system, &ComputeModel::paper()).unwrap();
    let t = |name, json, parse| Template { name, json, parse };
    vec![
        t("GptModel", to_json(&model), |v| {
            parse_as::<GptModel>(v, |m| m.validate().map_err(|e| e.to_string()))
        }),
        t("ComputeModel", to_json(&ComputeModel::paper()), |v| {
            parse_as::<ComputeModel>(v, |c| c.validate().map_err(|e| e.to_string()))
        }),
        t("SystemSpec", to_json(&system), |v| {
            parse_as::<SystemSpec>(v, |s| s.validate().map_err(|e| e.to_string()))
        }),
        t("Parallelization", to_json(&par), |v| {
            parse_as::<Parallelization>(v, |p| {
                let counts = [p.tp, p.pp, p.dp, p.tp_hb, p.pp_hb, p.dp_hb, p.micro_batch];
                let rest = [p.global_batch, p.interleave];
                let parts = p.tp % p.tp_hb == 0 && p.pp % p.pp_hb == 0 && p.dp % p.dp_hb == 0;
                if counts.iter().chain(&rest).all(|&x| x >= 1) && parts {
                    round_trip(p)
                } else {
                    fail(format!("invalid configuration parses: {p:?}"))
                }
            })
        }),
        t("ExpertParallelism", to_json(&expert), |v| {
            parse_as::<ExpertParallelism>(v, |e| {
                if [e.ep, e.esp, e.moe_every, e.top_k].iter().all(|&x| x >= 1) {
                    Ok(())
                } else {
                    fail(format!("zero count parses: {e:?}"))
                }
            })
        }),
        t("PriceModel", to_json(&PriceModel::default()), |v| {
            parse_as::<PriceModel>(v, |p| p.validate().map_err(|e| e.to_string()))
        }),
        t("FabricParams", to_json(&params), |v| {
            parse_as::<FabricParams>(v, |p| p.validate().map_err(|e| e.to_string()))
        }),
        t("FailureContext", to_json(&ctx), |v| {
            parse_as::<FailureContext>(v, |c| c.validate().map_err(|e| e.to_string()))
        }),
        t("Failure", to_json(&Failure::Link { tier: 1 }), |v| {
            parse_as::<Failure>(v, no_check)
        }),
        t("SearchOptions", to_json(&SearchOptions::default()), |v| {
            parse_as::<SearchOptions>(v, no_check)
        }),
        t("PublishedRun", to_json(&run), |v| {
            parse_as::<PublishedRun>(v, |r| r.validate().map_err(|e| e.to_string()))
        }),
        t("RankMapping", to_json(&map), |v| {
            parse_as::<RankMapping>(v, |m| {
                let again =
                    RankMapping::new(m.model(), m.parallelization(), m.gpus(), m.hb_domain())
                        .and_then(|x| match m.experts() {
                            Some(&e) => x.with_experts(e),
                            None => Ok(x),
                        })
                        .map_err(|e| format!("parsed mapping does not rebuild: {e}"))?;
                if &again == m {
                    Ok(())
                } else {
                    fail("parsed mapping differs when rebuilt")
                }
            })
        }),
        t("JobTraffic", to_json(&traffic), |v| {
            parse_as::<JobTraffic>(v, |t| t.validate().map_err(|e| e.to_string()))
        }),
        t("SearchResult", to_json(&found), |v| {
            parse_as::<SearchResult>(v, no_check)
        }),
        t("IterationTerms", to_json(&found.best.terms), |v| {
            parse_as::<IterationTerms>(v, no_check)
        }),
        t("MemoryBreakdown", to_json(&found.best.memory), |v| {
            parse_as::<MemoryBreakdown>(v, no_check)
        }),
        t(
            "FabricComparison",
            to_json(&compare_fabrics(&params, &PriceModel::default()).unwrap()),
            |v| parse_as::<FabricComparison>(v, no_check),
        ),
        t(
            "FailureImpact",
            to_json(&failure_impact(FabricKind::RailOnly, &params, Failure::Server, &ctx).unwrap()),
            |v| parse_as::<FailureImpact>(v, no_check),
        ),
        t(
            "TrafficSummary",
            to_json(&traffic.summary().unwrap()),
            |v| parse_as::<TrafficSummary>(v, no_check),
        ),
        t("AccuracyRow", to_json(&rows[0]), |v| {
            parse_as::<AccuracyRow>(v, no_check)
        }),
        t(
            "FlopSplit",
            to_json(&flop_split(&model, 1.0, Recompute::Full).unwrap()),
            |v| parse_as::<FlopSplit>(v, no_check),
        ),
        t(
            "SweepPoint",
            to_json(&sweep_point(&model, &system, &ComputeModel::paper(), 8, 8).unwrap()),
            |v| parse_as::<SweepPoint>(v, no_check),
        ),
        t(
            "LeaveOneOutRow",
            to_json(&LeaveOneOutRow {
                label: "x".to_string(),
                measured_s: 1.0,
                predicted_s: 1.1,
                error: 0.1,
                fitted: ComputeModel::calibrated(),
            }),
            |v| parse_as::<LeaveOneOutRow>(v, |r| r.fitted.validate().map_err(|e| e.to_string())),
        ),
        t(
            "small results and enums",
            json!([
                to_json(&all_to_all_slowdown_sweep(&[8], 4, 900e9, 50e9).unwrap()[0]),
                to_json(&FabricNode::Switch {
                    rail: Some(1),
                    tier: 1,
                    index: 0
                }),
                to_json(&LinkKind::Network),
                to_json(&CollectiveAlgorithm::Hierarchical),
                to_json(&map.expert_placement().unwrap()),
            ]),
            |v| {
                parse_as::<(
                    AllToAllPoint,
                    FabricNode,
                    LinkKind,
                    CollectiveAlgorithm,
                    ExpertPlacement,
                )>(v, no_check)
            },
        ),
    ]
}

/// Every `(path, leaf)` of a JSON document, depth first.
pub(crate) fn leaves(v: &Value, out: &mut Vec<Vec<PathStep>>, at: &mut Vec<PathStep>) {
    match v {
        Value::Array(items) => {
            out.push(at.clone());
            for (i, item) in items.iter().enumerate() {
                at.push(PathStep::Index(i));
                leaves(item, out, at);
                at.pop();
            }
        }
        Value::Object(map) => {
            out.push(at.clone());
            for (k, item) in map {
                at.push(PathStep::Key(k.clone()));
                leaves(item, out, at);
                at.pop();
            }
        }
        _ => out.push(at.clone()),
    }
}

#[derive(Debug, Clone)]
pub(crate) enum PathStep {
    Index(usize),
    Key(String),
}

pub(crate) fn at_mut<'a>(v: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, step| match step {
        PathStep::Index(i) => v.get_mut(*i),
        PathStep::Key(k) => v.get_mut(k.as_str()),
    })
}

/// One edit of a JSON document: replace the `at`-th node by an extreme value, or remove it
/// from its parent (a missing field, a shorter array).
#[derive(Debug, Clone, Copy)]
pub(crate) struct JsonEdit {
    pub at: usize,
    pub value: usize,
    pub remove: bool,
}
