//! The small core every synopsis plugs into: the [`Operator`] and [`Mergeable`] traits, the
//! [`OperatorExt`] conveniences, confidence intervals, the error types, and what two families
//! share (weights, counter widths).
//!
//! The design follows `rand`'s split of a tiny core trait and a blanket extension trait: an
//! implementer writes [`Operator::observe`] and, for mergeable state,
//! [`Mergeable::merge`] and [`Mergeable::empty_like`]; everything else comes for free.

pub(crate) mod alloc;
mod bounds;
mod counter_width;
mod error;
pub(crate) mod extended;
pub(crate) mod float;
pub(crate) mod random;
mod traits;
mod weight;

pub use bounds::{Bounds, Confidence, Estimate};
pub use counter_width::CounterWidth;
pub use error::{ConfigError, DecodeError, Error, MergeError, RemoveError};
pub(crate) use traits::hashed_operator;
pub use traits::{Mergeable, ObserveHash, Operator, OperatorExt};
pub use weight::Weight;
