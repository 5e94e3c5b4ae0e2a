//! The cost of encoding one stored Pod (benches/pod.json: a Pod of the size of the server
//! benches' realistic one, as kapi serves it, managedFields included) as a protobuf list
//! item straight from its JSON text, as a protobuf LIST does for each item the watch cache
//! has not kept.
//!
//! `cargo bench -p kapi-protobuf --bench transcode`

use std::time::Instant;

const ROUNDS: usize = 20_000;

fn main() {
    let json = include_bytes!("pod.json");
    let encoder = kapi_protobuf::ListEncoder::new("v1", "PodList").expect("PodList");
    let (mut message, mut out) = (Vec::with_capacity(16 * 1024), Vec::with_capacity(16 * 1024));
    let item = |message: &mut Vec<u8>, out: &mut Vec<u8>| {
        message.clear();
        out.clear();
        encoder.message_json(json, message).expect("encodes");
        encoder.put_item(message, out);
    };
    item(&mut message, &mut out);
    let encoded = out.len();
    let start = Instant::now();
    for _ in 0..ROUNDS {
        item(&mut message, &mut out);
    }
    let per_item = start.elapsed() / ROUNDS as u32;
    println!(
        "| one Pod ({} B of JSON, {encoded} B of protobuf) as a list item | {per_item:?} |",
        json.len()
    );
}
