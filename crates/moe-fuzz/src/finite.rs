//! Checking that a result holds finite numbers only.

use serde::Serialize;
use serde_json::Value;

/// `Ok` when `x` is finite, else a description naming `what`.
///
/// # Errors
///
/// `x` is NaN or infinite.
pub fn check_finite(what: &str, x: f64) -> Result<(), String> {
    if x.is_finite() {
        Ok(())
    } else {
        Err(format!("Ok with non-finite {what} = {x}"))
    }
}

/// `Ok` when the JSON form of `value` holds no non-finite number. serde writes NaN and the
/// infinities as `null`, so a `null` is a failure unless its key is one of `option_keys` (the
/// `Option` fields of the type, where `null` means `None`).
///
/// # Errors
///
/// The paths (`.a[3].b`) of the offending values, or a serialization failure.
pub fn check_finite_json<T: Serialize>(value: &T, option_keys: &[&str]) -> Result<(), String> {
    let v = serde_json::to_value(value).map_err(|e| format!("serialize: {e}"))?;
    let mut bad = Vec::new();
    walk(&v, "", "", option_keys, &mut bad);
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("Ok with non-finite values at {bad:?}"))
    }
}

fn walk(v: &Value, at: &str, key: &str, option_keys: &[&str], out: &mut Vec<String>) {
    match v {
        Value::Null if !option_keys.contains(&key) => out.push(format!("{at} (null)")),
        Value::Number(n) if n.as_f64().is_some_and(|x| !x.is_finite()) => out.push(at.to_string()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{at}[{i}]"), key, option_keys, out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                walk(item, &format!("{at}.{k}"), k, option_keys, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_inside_a_struct_is_found() {
        #[derive(Serialize)]
        struct S {
            a: Vec<f64>,
            b: Option<f64>,
        }
        let s = S {
            a: vec![1.0, f64::NAN],
            b: None,
        };
        let e = check_finite_json(&s, &["b"]).unwrap_err();
        assert!(e.contains(".a[1]"), "{e}");
        assert!(
            check_finite_json(
                &S {
                    a: vec![1.0],
                    b: None
                },
                &["b"]
            )
            .is_ok()
        );
        assert!(check_finite("x", f64::INFINITY).is_err());
    }
}
