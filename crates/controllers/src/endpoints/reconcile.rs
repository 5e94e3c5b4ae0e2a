//! Writing the EndpointSlices one manager keeps for one Service, shared by the
//! `endpointslice` and `endpointslice-mirroring` controllers as upstream's reconcilers
//! share their shape: existing slices keep the endpoints still wanted (updated in place),
//! slices whose address type and ports are no longer wanted go, new endpoints fill the
//! existing slices with room before new slices are made, at most `capacity` to a slice.
//!
//! Each write is waited for in the watch cache before the sync ends, so the next sync of
//! the same Service (never concurrent with this one) sees it: without that, a sync started
//! before a new slice reached the cache would make a second one (upstream's
//! endpointSliceTracker serves the same end).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use kapi_server::endpoints::Served;
use kapi_server::loopback::LoopbackClient;
use serde_json::{Value, json};

/// How long a sync waits for its own writes to reach the cache.
const CACHE_WAIT: Duration = Duration::from_secs(5);

/// The slices wanted for a Service: by address type and ports (as JSON), the ports and
/// the endpoints.
pub(super) type Desired = BTreeMap<(String, String), (Value, Vec<Value>)>;

/// One manager's slices of one Service.
pub(super) struct Slices<'a> {
    pub client: &'a LoopbackClient,
    pub slices: &'a Served,
    pub namespace: &'a str,
    /// The slices it keeps now.
    pub existing: Vec<Value>,
    /// What every one of them carries besides its endpoints: metadata (labels,
    /// annotations, owner, generateName) for a new slice, whose labels and annotations an
    /// existing slice is given too.
    pub metadata: Value,
    /// The most endpoints in one slice.
    pub capacity: usize,
}

/// What makes an endpoint the same one across syncs, as upstream's endpoint hash: its
/// addresses, hostname and the object it stands for.
fn identity(endpoint: &Value) -> String {
    let target = &endpoint["targetRef"];
    format!(
        "{}|{}|{}/{}",
        endpoint["addresses"],
        endpoint["hostname"].as_str().unwrap_or_default(),
        target["namespace"].as_str().unwrap_or_default(),
        target["name"].as_str().unwrap_or_default()
    )
}

fn slice_key(slice: &Value) -> (String, String) {
    let ports = match &slice["ports"] {
        Value::Null => json!([]),
        ports => ports.clone(),
    };
    (
        slice["addressType"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        ports.to_string(),
    )
}

impl Slices<'_> {
    /// Brings the slices to `desired`; with nothing desired, keeps (or makes) the one empty
    /// slice of `placeholder`'s address type when given, as upstream's endpointslice
    /// controller does.
    pub async fn reconcile(
        self,
        desired: Desired,
        placeholder: Option<&str>,
    ) -> Result<(), String> {
        let mut unplaced: BTreeMap<(String, String), (Value, Vec<Value>)> = desired.clone();
        let wanted: BTreeMap<(String, String), BTreeMap<String, Value>> = desired
            .into_iter()
            .map(|(key, (_, endpoints))| {
                let by_identity = endpoints.into_iter().map(|e| (identity(&e), e)).collect();
                (key, by_identity)
            })
            .collect();
        let (mut updates, mut deletes) = (Vec::new(), Vec::new());
        let mut kept: Vec<Value> = Vec::new();
        // Slices another owner controls (a deleted object of the same name) go, as
        // upstream's reconciler deletes slices its Service does not own.
        let owner = &self.metadata["ownerReferences"][0]["uid"];
        let owned = |slice: &Value| {
            let references = slice["metadata"]["ownerReferences"].as_array();
            references
                .into_iter()
                .flatten()
                .any(|r| r["controller"] == true && r["uid"] == *owner)
        };
        for slice in &self.existing {
            if owner.is_null() || !owned(slice) {
                deletes.push(slice.clone());
                continue;
            }
            let key = slice_key(slice);
            let Some(wanted) = wanted.get(&key) else {
                deletes.push(slice.clone());
                continue;
            };
            let placed: HashSet<String> = match unplaced.get(&key) {
                Some((_, endpoints)) => endpoints.iter().map(identity).collect(),
                None => HashSet::new(),
            };
            let endpoints: Vec<Value> = slice["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|endpoint| {
                    let id = identity(endpoint);
                    placed.contains(&id).then(|| wanted[&id].clone())
                })
                .collect();
            if endpoints.is_empty() {
                deletes.push(slice.clone());
                continue;
            }
            if let Some((_, remaining)) = unplaced.get_mut(&key) {
                let taken: HashSet<String> = endpoints.iter().map(identity).collect();
                remaining.retain(|endpoint| !taken.contains(&identity(endpoint)));
            }
            let mut updated = self.with_metadata(slice.clone());
            updated["endpoints"] = Value::Array(endpoints);
            if updated != *slice {
                updates.push(updated.clone());
            }
            kept.push(updated);
        }
        // New endpoints fill the kept slices with room first.
        for slice in kept.iter_mut() {
            let key = slice_key(slice);
            let Some((_, remaining)) = unplaced.get_mut(&key) else {
                continue;
            };
            let endpoints = slice["endpoints"]
                .as_array_mut()
                .expect("kept slices have endpoints");
            let room = self
                .capacity
                .saturating_sub(endpoints.len())
                .min(remaining.len());
            if room == 0 {
                continue;
            }
            endpoints.extend(remaining.drain(..room));
            let name = slice["metadata"]["name"].clone();
            updates.retain(|update| update["metadata"]["name"] != name);
            updates.push(slice.clone());
        }
        let mut creates = Vec::new();
        for ((address_type, _), (ports, remaining)) in unplaced {
            for chunk in remaining.chunks(self.capacity.max(1)) {
                creates.push(self.new_slice(&address_type, &ports, chunk.to_vec()));
            }
        }
        if let Some(address_type) = placeholder
            && creates.is_empty()
            && kept.is_empty()
        {
            let empty = self.new_slice(address_type, &json!([]), Vec::new());
            let existing_placeholder = deletes.iter().position(|slice| {
                owned(slice)
                    && slice_key(slice) == slice_key(&empty)
                    && slice["endpoints"].as_array().is_none_or(Vec::is_empty)
            });
            match existing_placeholder {
                Some(index) => {
                    let slice = deletes.remove(index);
                    let updated = self.with_metadata(slice.clone());
                    if updated != slice {
                        updates.push(updated);
                    }
                }
                None => creates.push(empty),
            }
        }
        self.write(creates, updates, deletes).await
    }

    /// `slice` with the labels and annotations every slice of this manager carries.
    fn with_metadata(&self, mut slice: Value) -> Value {
        for field in ["labels", "annotations"] {
            let wanted = &self.metadata[field];
            if wanted.as_object().is_some_and(|m| !m.is_empty())
                || !slice["metadata"][field].is_null()
            {
                slice["metadata"][field] = wanted.clone();
            }
        }
        slice
    }

    fn new_slice(&self, address_type: &str, ports: &Value, endpoints: Vec<Value>) -> Value {
        let mut metadata = self.metadata.clone();
        metadata["namespace"] = self.namespace.into();
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": metadata, "addressType": address_type, "endpoints": endpoints,
            "ports": ports})
    }

    /// Creates, updates and deletes, then waits for the cache to show each write done (also
    /// when one failed, so that the retry does not make a slice again).
    async fn write(
        &self,
        creates: Vec<Value>,
        updates: Vec<Value>,
        deletes: Vec<Value>,
    ) -> Result<(), String> {
        let mut seen = Vec::new();
        let written = self.send(creates, updates, deletes, &mut seen).await;
        let cached = wait_cached(self.slices, self.namespace, &seen).await;
        written.and(cached)
    }

    /// Sends the writes in order until one fails, recording each done in `seen`.
    async fn send(
        &self,
        creates: Vec<Value>,
        updates: Vec<Value>,
        deletes: Vec<Value>,
        seen: &mut Vec<(String, Option<i64>)>,
    ) -> Result<(), String> {
        let path = format!(
            "/apis/discovery.k8s.io/v1/namespaces/{}/endpointslices",
            self.namespace
        );
        for slice in creates {
            let created = self
                .client
                .json(http::Method::POST, &path, None, Some(&slice))
                .await
                .map_err(|err| format!("creating an EndpointSlice: {err}"))?;
            seen.push(written(&created));
        }
        for slice in updates {
            let name = slice["metadata"]["name"].as_str().unwrap_or_default();
            let updated = self
                .client
                .json(
                    http::Method::PUT,
                    &format!("{path}/{name}"),
                    None,
                    Some(&slice),
                )
                .await
                .map_err(|err| format!("updating EndpointSlice {name}: {err}"))?;
            seen.push(written(&updated));
        }
        for slice in deletes {
            let name = slice["metadata"]["name"].as_str().unwrap_or_default();
            let deleted = self
                .client
                .json(http::Method::DELETE, &format!("{path}/{name}"), None, None)
                .await;
            match deleted {
                Ok(_) => seen.push((name.to_string(), None)),
                Err(err) if err.code() == 404 => {}
                Err(err) => return Err(format!("deleting EndpointSlice {name}: {err}")),
            }
        }
        Ok(())
    }
}

/// The name and resourceVersion of a written object.
fn written(object: &Value) -> (String, Option<i64>) {
    let metadata = &object["metadata"];
    let version = metadata["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok());
    (
        metadata["name"].as_str().unwrap_or_default().to_string(),
        version.or(Some(0)),
    )
}

/// Waits until `served`'s cache shows every write of `seen`: each name at its
/// resourceVersion or later, or (`None`) gone.
pub(super) async fn wait_cached(
    served: &Served,
    namespace: &str,
    seen: &[(String, Option<i64>)],
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + CACHE_WAIT;
    loop {
        let caught_up = seen.iter().all(|(name, version)| {
            let cached = served.cached(namespace, name);
            match (version, cached) {
                (None, cached) => cached.is_none(),
                (Some(version), Some(object)) => object["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|cached| cached >= *version),
                (Some(_), None) => false,
            }
        });
        if caught_up {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err("the watch cache did not show this controller's writes in time".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
