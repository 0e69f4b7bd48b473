//! Fuzzes serde_json's parser (a registry crate, instrumented like every crate of the target:
//! `cargo make fuzz-target TARGET=json`).

#![no_main]

labelfuzz::fuzz_target!(|data: &[u8]| {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        // Round-trip: what parses must serialize and parse back to the same value.
        let text = serde_json::to_vec(&value).expect("a parsed value serializes");
        let again: serde_json::Value =
            serde_json::from_slice(&text).expect("serialized JSON parses");
        assert_eq!(value, again, "JSON round trip changed the value");
    }
});
