//! The cost of encoding one stored Pod (benches/pod.json: a Pod of the size of the server
//! benches' realistic one, as kapi serves it, managedFields included) as a protobuf list
//! item straight from its JSON text, as a protobuf LIST does for each item.
//!
//! `cargo bench -p kapi-protobuf --bench transcode`

use std::time::Instant;

const ROUNDS: usize = 20_000;

fn main() {
    let json = include_bytes!("pod.json");
    let encoder = kapi_protobuf::ListEncoder::new("v1", "PodList").expect("PodList");
    let mut out = Vec::with_capacity(16 * 1024);
    encoder.item_json(json, &mut out).expect("encodes");
    let encoded = out.len();
    let start = Instant::now();
    for _ in 0..ROUNDS {
        out.clear();
        encoder.item_json(json, &mut out).expect("encodes");
    }
    let per_item = start.elapsed() / ROUNDS as u32;
    println!(
        "| one Pod ({} B of JSON, {encoded} B of protobuf) as a list item | {per_item:?} |",
        json.len()
    );
}
