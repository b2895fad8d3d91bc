//! Other systems' sketches, byte for byte: read them, update them the way their system does,
//! merge them, and write them back for that system to use.
//!
//! | type | system | what is compatible |
//! |---|---|---|
//! | [`DataSketchesHll`] | Apache DataSketches (Java, C++, Python, Rust; Druid, Spark, Hive) | every HLL image (HLL_4, HLL_6, HLL_8; list, set and HLL modes; compact and updatable); DataSketches' hash of integers, doubles, strings and bytes; its union across `lg_k` and types; its estimates and bounds (HIP, composite, coupon); to and from the crate's [`HyperLogLog`](crate::cardinality::HyperLogLog) at `lg_k` up to 18 |
//! | [`RedisHyperLogLog`] | Redis (`PFADD`, `PFCOUNT`, `PFMERGE`; the value `GET` returns) | the string value, dense and sparse; Redis's hash of an element's bytes; `PFCOUNT`'s estimate, exactly; to and from the crate's [`HyperLogLog`](crate::cardinality::HyperLogLog) at precision 14 |
//!
//! These types keep their system's hash, not the crate's seeded xxh3 (see [`crate::hash`]): an
//! element observed here lands where that system puts it, so the sketches merge with the
//! system's own. The price is that they do not merge with the crate's sketches, whose
//! registers come from another hash.

pub mod datasketches;
pub mod redis;

pub use datasketches::{DataSketchesHll, DataSketchesItem, HllMode, HllType};
pub use redis::RedisHyperLogLog;
