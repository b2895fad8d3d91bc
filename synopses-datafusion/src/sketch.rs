//! The sketches the functions build and read, as one type: what each kind is configured
//! with, how its bytes are recognized, and what it answers.

use datafusion::common::{DataFusionError, Result, ScalarValue, plan_err};
use synopses::cardinality::{ExaLogLog, HyperLogLog, UltraLogLog};
use synopses::codec::Codec;
use synopses::core::{Bounds, Confidence, ObserveHash};
use synopses::frequency::CountMin;
use synopses::membership::Bloom;

/// The kind of sketch a function builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// [`UltraLogLog`]: the default distinct count.
    Ull,
    /// [`HyperLogLog`].
    Hll,
    /// [`ExaLogLog`] of the recommended shape (`t = 2`, `d = 20`).
    Ell,
    /// [`CountMin`] (standard update).
    CountMin,
    /// [`Bloom`].
    Bloom,
}

/// What a parameter of a kind is: an integer or a real number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Param {
    Int(&'static str),
    Real(&'static str),
}

impl Param {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Int(name) | Self::Real(name) => name,
        }
    }
}

/// An integer parameter's value.
fn int(function: &str, what: &str, value: &ScalarValue) -> Result<i64> {
    Ok(match value {
        ScalarValue::Int8(Some(v)) => i64::from(*v),
        ScalarValue::Int16(Some(v)) => i64::from(*v),
        ScalarValue::Int32(Some(v)) => i64::from(*v),
        ScalarValue::Int64(Some(v)) => *v,
        ScalarValue::UInt8(Some(v)) => i64::from(*v),
        ScalarValue::UInt16(Some(v)) => i64::from(*v),
        ScalarValue::UInt32(Some(v)) => i64::from(*v),
        ScalarValue::UInt64(Some(v)) => i64::try_from(*v).unwrap_or(i64::MAX),
        other => return plan_err!("{function}: the {what} must be an integer, not {other}"),
    })
}

/// A real parameter's value.
fn real(function: &str, what: &str, value: &ScalarValue) -> Result<f64> {
    match value.cast_to(&datafusion::arrow::datatypes::DataType::Float64) {
        Ok(ScalarValue::Float64(Some(v))) => Ok(v),
        _ => plan_err!("{function}: the {what} must be a number, not {value}"),
    }
}

impl Kind {
    /// The parameters after the values, all given or none (then the defaults).
    pub(crate) fn params(self) -> &'static [Param] {
        match self {
            Self::Ull | Self::Hll | Self::Ell => &[Param::Int("precision")],
            Self::CountMin => &[Param::Int("width"), Param::Int("depth")],
            Self::Bloom => &[Param::Int("expected number of items"), Param::Real("false positive rate")],
        }
    }

    /// An empty sketch of this kind, with the crate's default seed, from the parameters (none
    /// for the defaults): each distinct count about DataFusion's `approx_distinct` error
    /// (0.81 % merged) by default, Count-Min 2048 × 5 (an overestimate of at most 0.13 % of the
    /// total with probability 99.3 %), Bloom for 10⁶ items at 1 % false positives (1.2 MB).
    pub(crate) fn build(self, function: &str, params: &[ScalarValue]) -> Result<Sketch> {
        let config = |e: synopses::ConfigError| DataFusionError::Plan(format!("{function}: {e}"));
        let expected = self.params();
        if !params.is_empty() && params.len() != expected.len() {
            let names: Vec<&str> = expected.iter().map(|p| p.name()).collect();
            return plan_err!("{function}: give all of {} or none", names.join(", "));
        }
        let small = |what: &str, v: i64| {
            u8::try_from(v).map_err(|_| DataFusionError::Plan(format!("{function}: {what} {v} is out of range")))
        };
        let precision = |default: u8| match params.first() {
            Some(p) => small("precision", int(function, "precision", p)?),
            None => Ok(default),
        };
        Ok(match self {
            Self::Ull => Sketch::Ull(UltraLogLog::new(precision(13)?).map_err(config)?),
            Self::Hll => Sketch::Hll(HyperLogLog::new(precision(14)?).map_err(config)?),
            Self::Ell => Sketch::Ell(ExaLogLog::new(precision(11)?).map_err(config)?),
            Self::CountMin => {
                let (width, depth) = match params {
                    [w, d] => (int(function, "width", w)?, int(function, "depth", d)?),
                    _ => (2048, 5),
                };
                let width = usize::try_from(width)
                    .map_err(|_| DataFusionError::Plan(format!("{function}: width {width} is out of range")))?;
                let depth = u32::try_from(depth)
                    .map_err(|_| DataFusionError::Plan(format!("{function}: depth {depth} is out of range")))?;
                Sketch::CountMin(CountMin::new(width, depth).map_err(config)?)
            }
            Self::Bloom => {
                let (items, rate) = match params {
                    [n, p] => {
                        (int(function, "expected number of items", n)?, real(function, "false positive rate", p)?)
                    }
                    _ => (1_000_000, 0.01),
                };
                let items = u64::try_from(items).map_err(|_| {
                    DataFusionError::Plan(format!("{function}: {items} expected items is out of range"))
                })?;
                Sketch::Bloom(Bloom::with_false_positive_rate(items, rate).map_err(config)?)
            }
        })
    }
}

/// A sketch of any kind.
#[derive(Debug, Clone)]
pub(crate) enum Sketch {
    Ull(UltraLogLog),
    Hll(HyperLogLog),
    Ell(ExaLogLog),
    CountMin(CountMin),
    Bloom(Bloom),
}

/// Calls `$body` with `$s` bound to the sketch inside `$value`, whatever its kind.
macro_rules! each {
    ($value:expr, $s:ident => $body:expr) => {
        match $value {
            Sketch::Ull($s) => $body,
            Sketch::Hll($s) => $body,
            Sketch::Ell($s) => $body,
            Sketch::CountMin($s) => $body,
            Sketch::Bloom($s) => $body,
        }
    };
}

impl Sketch {
    /// Decodes the bytes of any kind, by the family in their header.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let decoded = match bytes.get(3).copied() {
            Some(UltraLogLog::FAMILY) => UltraLogLog::from_bytes(bytes).map(Self::Ull),
            Some(HyperLogLog::FAMILY) => HyperLogLog::from_bytes(bytes).map(Self::Hll),
            Some(ExaLogLog::FAMILY) => ExaLogLog::from_bytes(bytes).map(Self::Ell),
            Some(CountMin::FAMILY) => CountMin::from_bytes(bytes).map(Self::CountMin),
            Some(Bloom::FAMILY) => Bloom::from_bytes(bytes).map(Self::Bloom),
            _ => {
                return Err("not the bytes of a sketch these functions build (UltraLogLog, HyperLogLog, \
                            ExaLogLog, Count-Min, Bloom)"
                    .into());
            }
        };
        decoded.map_err(|e| e.to_string())
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        each!(self, s => s.to_bytes())
    }

    pub(crate) fn size(&self) -> usize {
        each!(self, s => s.size_in_bytes())
    }

    pub(crate) fn seed(&self) -> u64 {
        each!(self, s => s.hash_seed())
    }

    /// Observes the values of `hashes`, in order, through the sketch's batch loop.
    pub(crate) fn observe_hashes(&mut self, hashes: &[u64]) {
        each!(self, s => ObserveHash::observe_hashes(s, hashes.iter().copied()));
    }

    /// The estimated number of distinct values, for a distinct count.
    pub(crate) fn estimate(&self) -> Option<f64> {
        match self {
            Self::Ull(s) => Some(s.estimate()),
            Self::Hll(s) => Some(s.estimate()),
            Self::Ell(s) => Some(s.estimate()),
            Self::CountMin(_) | Self::Bloom(_) => None,
        }
    }

    /// The confidence interval of [`estimate`](Self::estimate).
    pub(crate) fn bounds(&self, confidence: Confidence) -> Option<Bounds> {
        match self {
            Self::Ull(s) => Some(s.bounds(confidence)),
            Self::Hll(s) => Some(s.bounds(confidence)),
            Self::Ell(s) => Some(s.bounds(confidence)),
            Self::CountMin(_) | Self::Bloom(_) => None,
        }
    }

    /// The estimated frequency of the value of `hash` (under [`seed`](Self::seed)), for a
    /// Count-Min sketch: never below the truth.
    pub(crate) fn frequency(&self, hash: u64) -> Option<u64> {
        match self {
            Self::CountMin(s) => Some(s.estimate_hash(hash)),
            _ => None,
        }
    }

    /// Whether the value of `hash` may have been seen, for a Bloom filter: never a false
    /// negative.
    pub(crate) fn contains(&self, hash: u64) -> Option<bool> {
        match self {
            Self::Bloom(s) => Some(s.contains_hash(hash)),
            _ => None,
        }
    }

    /// Merges `other` into this sketch: the same kind and configuration.
    pub(crate) fn merge(&mut self, other: &Self) -> Result<(), String> {
        match (self, other) {
            (Self::Ull(a), Self::Ull(b)) => a.merge(b).map_err(|e| e.to_string()),
            (Self::Hll(a), Self::Hll(b)) => a.merge(b).map_err(|e| e.to_string()),
            (Self::Ell(a), Self::Ell(b)) => a.merge(b).map_err(|e| e.to_string()),
            (Self::CountMin(a), Self::CountMin(b)) => a.merge(b).map_err(|e| e.to_string()),
            (Self::Bloom(a), Self::Bloom(b)) => a.merge(b).map_err(|e| e.to_string()),
            (a, b) => Err(format!("cannot merge {} into {}", b.kind_name(), a.kind_name())),
        }
    }

    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Self::Ull(_) => "an UltraLogLog",
            Self::Hll(_) => "a HyperLogLog",
            Self::Ell(_) => "an ExaLogLog",
            Self::CountMin(_) => "a Count-Min sketch",
            Self::Bloom(_) => "a Bloom filter",
        }
    }
}
