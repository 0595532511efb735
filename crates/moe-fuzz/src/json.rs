//! Mutating a valid JSON document: the way specs and files reach the planners.

use proptest::prelude::*;
use serde_json::{Value, json};

/// Values JSON can carry that sit at the edges of `f64`, `u64` and `i64`.
#[must_use]
pub fn json_extremes() -> Vec<Value> {
    vec![
        json!(0),
        json!(-0.0),
        json!(1),
        json!(2),
        json!(-1),
        json!(0.5),
        json!(5e-324),
        json!(2.2250738585072014e-308),
        json!(1e-300),
        json!(1e308),
        json!(f64::MAX),
        json!(-f64::MAX),
        json!(9_007_199_254_740_993_u64),
        json!(1_u64 << 32),
        json!(1_000_000_000_000_000_000_u64),
        json!(u64::MAX),
        json!(u64::MAX - 1),
        json!(i64::MIN),
        json!(100_000),
    ]
}

/// One change to a JSON document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonMutation {
    /// Sets the `at`-th number of the document (mod their count) to `json_extremes()[value]`.
    Number {
        /// Which number, modulo their count.
        at: usize,
        /// Index into [`json_extremes`].
        value: usize,
    },
    /// Truncates the `at`-th array to `len` or grows it by copies of its last element.
    Resize {
        /// Which array, modulo their count.
        at: usize,
        /// The new length.
        len: usize,
    },
    /// Drops the last element of the last array inside the `at`-th array (a ragged matrix).
    Ragged {
        /// Which array, modulo their count.
        at: usize,
    },
}

/// A [`JsonMutation`]: mostly numbers set to extremes, then resized arrays, then ragged rows.
pub fn json_mutation() -> impl Strategy<Value = JsonMutation> {
    let n = json_extremes().len();
    prop_oneof![
        4 => (any::<usize>(), 0..n).prop_map(|(at, value)| JsonMutation::Number { at, value }),
        2 => (any::<usize>(), 0_usize..24).prop_map(|(at, len)| JsonMutation::Resize { at, len }),
        1 => any::<usize>().prop_map(|at| JsonMutation::Ragged { at }),
    ]
}

/// JSON pointers of every number and every array in `v`, in document order.
fn leaves(v: &Value, at: &str, numbers: &mut Vec<String>, arrays: &mut Vec<String>) {
    match v {
        Value::Number(_) => numbers.push(at.to_string()),
        Value::Array(items) => {
            arrays.push(at.to_string());
            for (i, item) in items.iter().enumerate() {
                leaves(item, &format!("{at}/{i}"), numbers, arrays);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let key = k.replace('~', "~0").replace('/', "~1");
                leaves(item, &format!("{at}/{key}"), numbers, arrays);
            }
        }
        _ => {}
    }
}

/// Applies `mutations` to a copy of `seed`; also returns what they changed, as
/// `pointer = value` lines a failure message can show.
#[must_use]
pub fn mutate_json(seed: &Value, mutations: &[JsonMutation]) -> (Value, Vec<String>) {
    let mut v = seed.clone();
    let mut log = Vec::new();
    let extremes = json_extremes();
    for m in mutations {
        let (mut numbers, mut arrays) = (Vec::new(), Vec::new());
        leaves(&v, "", &mut numbers, &mut arrays);
        match *m {
            JsonMutation::Number { at, value } if !numbers.is_empty() => {
                let at = &numbers[at % numbers.len()];
                let new = &extremes[value % extremes.len()];
                if let Some(slot) = v.pointer_mut(at) {
                    *slot = new.clone();
                    log.push(format!("{at} = {new}"));
                }
            }
            JsonMutation::Resize { at, len } if !arrays.is_empty() => {
                let at = &arrays[at % arrays.len()];
                log.push(format!("{at}: length {len}"));
                if let Some(Value::Array(items)) = v.pointer_mut(at) {
                    match items.last().cloned() {
                        Some(last) if len > items.len() => items.resize(len, last),
                        _ => items.truncate(len),
                    }
                }
            }
            JsonMutation::Ragged { at } if !arrays.is_empty() => {
                let at = &arrays[at % arrays.len()];
                log.push(format!("{at}: last row one shorter"));
                if let Some(Value::Array(items)) = v.pointer_mut(at)
                    && let Some(Value::Array(inner)) = items.last_mut()
                {
                    inner.pop();
                }
            }
            _ => {}
        }
    }
    (v, log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_change_what_they_say() {
        let seed = json!({"a": [[1, 2], [3, 4]], "b": 5});
        let (v, log) = mutate_json(&seed, &[JsonMutation::Number { at: 4, value: 15 }]);
        assert_eq!(v["b"], json!(u64::MAX));
        assert_eq!(log, vec![format!("/b = {}", u64::MAX)]);
        let (v, _) = mutate_json(&seed, &[JsonMutation::Ragged { at: 0 }]);
        assert_eq!(v["a"], json!([[1, 2], [3]]));
        let (v, _) = mutate_json(&seed, &[JsonMutation::Resize { at: 0, len: 3 }]);
        assert_eq!(v["a"], json!([[1, 2], [3, 4], [3, 4]]));
    }
}
