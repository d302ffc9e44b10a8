//! Environment overrides: `ELICITGATE__…` variables read on top of the file.
//!
//! Owns turning variable names into configuration paths. `__` separates levels; a level that
//! is a number indexes a list, so `ELICITGATE__ROUTES__0__UPSTREAM` sets the first route's
//! upstream and `ELICITGATE__ROUTES__1__NAME` (with its `PATH` and `UPSTREAM`) adds a second
//! route to a file that has one. The `config` crate's own environment source reads `0` as a
//! map key, which then clashes with the file's list ("invalid type: map, expected an array"),
//! so indexed variables are applied here as path overrides (`routes[0].upstream`) and the
//! others are left to that source.

use std::collections::HashMap;

/// The variables of one environment, split by how they reach the configuration.
#[derive(Debug, Default, PartialEq)]
pub struct Overrides {
    /// Variables without a list index, for `config::Environment` (names as they were).
    pub plain: HashMap<String, String>,
    /// `(path, value)` for variables with a list index: `routes[0].upstream`.
    pub indexed: Vec<(String, config::Value)>,
}

/// Sorts `vars` (name, value) into [`Overrides`]; names not starting with `{prefix}__` are
/// not overrides and are dropped.
pub fn split(prefix: &str, vars: impl IntoIterator<Item = (String, String)>) -> Overrides {
    let mut out = Overrides::default();
    let head = format!("{prefix}__");
    for (name, value) in vars {
        let Some(rest) = name.strip_prefix(&head) else {
            continue;
        };
        let levels: Vec<&str> = rest.split("__").collect();
        if !levels.iter().any(|l| is_index(l)) {
            out.plain.insert(name, value);
            continue;
        }
        let mut path = String::new();
        for level in levels {
            if is_index(level) && !path.is_empty() {
                path.push('[');
                path.push_str(level);
                path.push(']');
            } else {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&level.to_ascii_lowercase());
            }
        }
        out.indexed.push((path, typed(value)));
    }
    // The environment has no order; paths do (an index past the end extends the list, so the
    // lower indices go first).
    out.indexed.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn is_index(level: &str) -> bool {
    !level.is_empty() && level.len() <= 4 && level.bytes().all(|b| b.is_ascii_digit())
}

/// The value typed the way `config::Environment::try_parsing` types it: a boolean, an
/// integer, a float, else the string as written.
fn typed(value: String) -> config::Value {
    if let Ok(b) = value.to_ascii_lowercase().parse::<bool>() {
        return b.into();
    }
    if let Ok(i) = value.parse::<i64>() {
        return i.into();
    }
    if let Ok(f) = value.parse::<f64>() {
        if f.is_finite() {
            return f.into();
        }
    }
    value.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn indexed_levels_become_list_paths_and_the_rest_stays_plain() {
        let o = split(
            "ELICITGATE",
            vars(&[
                ("ELICITGATE__ROUTES__0__UPSTREAM", "http://10.0.0.1/mcp"),
                ("ELICITGATE__AUDIT__SALT", "0123456789abcdef"),
                ("ELICITGATE__POLICIES__P__TOOLS__1__NAME", "x"),
                ("PATH", "/bin"),
            ]),
        );
        assert_eq!(o.plain.len(), 1);
        assert!(o.plain.contains_key("ELICITGATE__AUDIT__SALT"));
        let paths: Vec<&str> = o.indexed.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["policies.p.tools[1].name", "routes[0].upstream"]);
    }

    #[test]
    fn values_are_typed_like_the_config_crate_types_them() {
        assert_eq!(typed("true".into()).into_bool().ok(), Some(true));
        assert_eq!(typed("42".into()).into_int().ok(), Some(42));
        assert_eq!(
            typed("http://x/".into()).into_string().ok().as_deref(),
            Some("http://x/")
        );
        assert_eq!(
            typed("inf".into()).into_string().ok().as_deref(),
            Some("inf")
        );
    }

    #[test]
    fn a_long_number_is_a_key_not_an_index() {
        let o = split("ELICITGATE", vars(&[("ELICITGATE__12345__X", "1")]));
        assert!(o.indexed.is_empty());
        assert_eq!(o.plain.len(), 1);
    }
}
