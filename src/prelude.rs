//! The traits a user needs in scope, in one import.
//!
//! Queries (`estimate`, `bounds`, `contains`, `sample`, ...) are inherent methods and need no
//! import; the traits bring the generic conveniences (`empty_like`, `merge_all`,
//! `observe_all` over any operator, `par_observe`), the codec for generic code, the item
//! hash, and with the `timely` feature the sketching operators on timely streams.
//!
//! ```
//! use synopses::cardinality::HyperLogLog;
//! use synopses::prelude::*;
//!
//! let parts = [HyperLogLog::new(12)?, HyperLogLog::new(12)?];
//! let mut union = parts[0].empty_like();
//! union.merge_all(&parts)?;
//! assert_eq!(union.encoded_len(), union.to_bytes().len());
//! assert_eq!(union.estimate(), 0.0);
//! # Ok::<(), synopses::Error>(())
//! ```

pub use crate::codec::Codec;
pub use crate::core::{Mergeable, ObserveHash, Operator, OperatorExt};
pub use crate::hash::Hashable;
#[cfg(feature = "timely")]
pub use crate::stream::timely::{SketchByKey, SketchStream};
