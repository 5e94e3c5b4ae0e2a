//! Interned names: the served definitions name resources, kinds and columns with
//! `&'static str`, which custom resources get from CRDs at run time. Each distinct string is
//! leaked once and reused, so memory is bounded by the distinct names ever served, not by how
//! often CRDs change.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

/// The `&'static str` equal to `name`, leaking it only the first time it is seen.
pub fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// Interned copies of `names`, as a `'static` slice (for short names and categories).
pub fn intern_all(names: &[String]) -> &'static [&'static str] {
    if names.is_empty() {
        return &[];
    }
    let interned: Vec<&'static str> = names.iter().map(|name| intern(name)).collect();
    intern_slice(interned)
}

/// One leaked slice per distinct list of names.
fn intern_slice(names: Vec<&'static str>) -> &'static [&'static str] {
    static LISTS: OnceLock<Mutex<HashSet<&'static [&'static str]>>> = OnceLock::new();
    let mut lists = LISTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&known) = lists.get(names.as_slice()) {
        return known;
    }
    let leaked: &'static [&'static str] = Box::leak(names.into_boxed_slice());
    lists.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_reuses_strings() {
        let a = intern(&String::from("crontabs"));
        let b = intern(&String::from("crontabs"));
        assert!(std::ptr::eq(a, b));
        let names = vec!["ct".to_string()];
        assert!(std::ptr::eq(intern_all(&names), intern_all(&names)));
        assert!(intern_all(&[]).is_empty());
    }
}
