//! Small JSON helpers shared by every floor.

/// Applies `f` to every string of `v`, object keys included.
pub fn map_strings(v: &mut serde_json::Value, f: &dyn Fn(&str) -> String) {
    use serde_json::Value;
    match v {
        Value::String(s) => *s = f(s),
        Value::Array(items) => items.iter_mut().for_each(|i| map_strings(i, f)),
        Value::Object(m) => {
            let old = std::mem::take(m);
            for (k, mut x) in old {
                map_strings(&mut x, f);
                m.insert(f(&k), x);
            }
        }
        _ => {}
    }
}
