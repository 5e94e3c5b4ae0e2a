//! Configuration objects (webhook configurations, policies, bindings) as the plugins use
//! them: read from the collection's watch cache on every request, parsed (and their CEL
//! compiled) once per object version.

use std::collections::HashMap;
use std::sync::Arc;

use kapi_server::endpoints::Served;
use kapi_server::registry::Item;
use kapi_storage::Revision;
use parking_lot::Mutex;
use serde_json::Value;

/// One collection's objects, parsed into `T`.
pub struct ParsedCollection<T> {
    served: Served,
    parsed: Mutex<HashMap<String, (Revision, Arc<T>)>>,
}

impl<T> ParsedCollection<T> {
    pub fn new(served: Served) -> ParsedCollection<T> {
        ParsedCollection {
            served,
            parsed: Mutex::new(HashMap::new()),
        }
    }

    /// The objects now in the cache, in name order, with `parse` run on the new versions.
    pub fn current(&self, parse: impl Fn(&Value) -> T) -> Vec<(String, Arc<T>)> {
        let registry = &self.served.registry;
        let snapshot = registry
            .cacher()
            .list(&registry.collection_prefix(None), |_| true);
        let mut parsed = self.parsed.lock();
        let mut current = Vec::with_capacity(snapshot.objects.len());
        for object in &snapshot.objects {
            let fresh = parsed
                .get(object.name())
                .filter(|(revision, _)| *revision == object.revision)
                .map(|(_, value)| value.clone());
            let value = fresh.unwrap_or_else(|| {
                let decoded = Item::from(&**object).decode().unwrap_or(Value::Null);
                let value = Arc::new(parse(&decoded));
                parsed.insert(object.name().to_string(), (object.revision, value.clone()));
                value
            });
            current.push((object.name().to_string(), value));
        }
        if parsed.len() > current.len() {
            parsed.retain(|name, _| current.iter().any(|(n, _)| n == name));
        }
        current
    }
}
