#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        let text = serde_json::to_vec(&value).expect("a parsed value serializes");
        let again: serde_json::Value = serde_json::from_slice(&text).expect("serialized JSON parses");
        assert_eq!(value, again, "JSON round trip changed the value");
    }
});
