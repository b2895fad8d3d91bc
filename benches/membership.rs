//! Placeholder until the membership benchmarks land.
fn main() {}
