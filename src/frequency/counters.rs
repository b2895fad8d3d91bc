//! The counter table of a Count-Min sketch at each counter width it offers: one table type
//! for the four widths, and the saturating arithmetic of the update rules.
//!
//! The width is chosen at run time (an enum of four boxed slices) rather than by a type
//! parameter: the sketch stays one type for codecs, serde, merges and engines, and the code
//! over the counters is still compiled once per width, behind one match per call.

use crate::core::ConfigError;
use crate::core::CounterWidth;
use crate::core::alloc;

/// A counter of one of the widths a sketch offers: `u8`, `u16`, `u32` or `u64`.
pub(super) trait Cell: Copy + Ord + Default {
    /// Bytes per counter, in memory and in the format.
    const BYTES: usize;
    /// The saturated value: a counter that reaches it stays there.
    const MAX: Self;
    /// `count`, or [`MAX`](Self::MAX) when it does not fit.
    fn clamped(count: u64) -> Self;
    /// The counter's value.
    fn widened(self) -> u64;
    /// `self + other` where the sum is known to fit: a plain add, cheaper than a saturating
    /// one (and it vectorizes). No counter exceeds the sketch's total, so sums fit while the
    /// total does.
    fn plus(self, other: Self) -> Self;
    /// `self + other`, saturating at [`MAX`](Self::MAX).
    fn saturating_plus(self, other: Self) -> Self;
    /// The counter of `Self::BYTES` little-endian bytes (0 for a slice of another length,
    /// which the callers' `chunks_exact` never pass).
    fn from_le(bytes: &[u8]) -> Self;
    /// Writes the counter's little-endian bytes to the front of `out`.
    fn put_le(self, out: &mut [u8]);
}

macro_rules! cell {
    ($t:ty) => {
        impl Cell for $t {
            const BYTES: usize = size_of::<$t>();
            const MAX: Self = <$t>::MAX;

            #[inline(always)]
            fn clamped(count: u64) -> Self {
                <$t>::try_from(count).unwrap_or(<$t>::MAX)
            }

            #[inline(always)]
            fn widened(self) -> u64 {
                u64::from(self)
            }

            #[inline(always)]
            fn plus(self, other: Self) -> Self {
                // Wrapping only to keep overflow checks out of the hot path: the callers
                // guarantee the sum fits.
                self.wrapping_add(other)
            }

            #[inline(always)]
            fn saturating_plus(self, other: Self) -> Self {
                self.saturating_add(other)
            }

            #[inline]
            fn from_le(bytes: &[u8]) -> Self {
                <[u8; size_of::<$t>()]>::try_from(bytes).map_or(0, <$t>::from_le_bytes)
            }

            #[inline]
            fn put_le(self, out: &mut [u8]) {
                out.iter_mut().zip(self.to_le_bytes()).for_each(|(o, b)| *o = b);
            }
        }
    };
}

cell!(u8);
cell!(u16);
cell!(u32);
cell!(u64);

/// The counters of a sketch, row-major: row `r` is `[r·width, (r + 1)·width)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Counters {
    U8(Box<[u8]>),
    U16(Box<[u16]>),
    U32(Box<[u32]>),
    U64(Box<[u64]>),
}

/// Evaluates `$body` with `$c` bound to the counter slice of `$counters` (a `Counters`, or a
/// reference to one), whatever its width: the body is compiled once per width.
macro_rules! with_counters {
    ($counters:expr, $c:ident => $body:expr) => {
        match $counters {
            Counters::U8($c) => $body,
            Counters::U16($c) => $body,
            Counters::U32($c) => $body,
            Counters::U64($c) => $body,
        }
    };
}
pub(super) use with_counters;

impl Counters {
    /// `len` zero counters of `width`, which must be 8 to 64 bits; `value` names the sketch's
    /// width in the error if the memory cannot be had.
    pub(super) fn zeroed(width: CounterWidth, len: usize, value: usize) -> Result<Self, ConfigError> {
        Ok(match width {
            CounterWidth::Eight => Self::U8(alloc::zeroed(len, "width", value)?.into_boxed_slice()),
            CounterWidth::Sixteen => Self::U16(alloc::zeroed(len, "width", value)?.into_boxed_slice()),
            CounterWidth::ThirtyTwo => Self::U32(alloc::zeroed(len, "width", value)?.into_boxed_slice()),
            CounterWidth::SixtyFour => Self::U64(alloc::zeroed(len, "width", value)?.into_boxed_slice()),
            CounterWidth::Four => return Err(ConfigError::new("counter_width", width.bits(), "8, 16, 32 or 64 bits")),
        })
    }

    /// As many zero counters, of the same width.
    pub(super) fn empty_like(&self) -> Self {
        match self {
            Self::U8(c) => Self::U8(vec![0; c.len()].into_boxed_slice()),
            Self::U16(c) => Self::U16(vec![0; c.len()].into_boxed_slice()),
            Self::U32(c) => Self::U32(vec![0; c.len()].into_boxed_slice()),
            Self::U64(c) => Self::U64(vec![0; c.len()].into_boxed_slice()),
        }
    }

    /// The counters' width.
    pub(super) fn width(&self) -> CounterWidth {
        match self {
            Self::U8(_) => CounterWidth::Eight,
            Self::U16(_) => CounterWidth::Sixteen,
            Self::U32(_) => CounterWidth::ThirtyTwo,
            Self::U64(_) => CounterWidth::SixtyFour,
        }
    }

    /// Bytes the counters take, in memory and in the format.
    pub(super) fn bytes(&self) -> usize {
        with_counters!(self, c => std::mem::size_of_val(&**c))
    }

    /// Adds `other`'s counters to these, saturating, which must be of the same width and
    /// number (a table of another width is left alone: the caller checks). `fits` says that
    /// the sketches' totals add up to at most the counters' maximum, so no sum can pass it.
    pub(super) fn add(&mut self, other: &Self, fits: bool) {
        match (self, other) {
            (Self::U8(a), Self::U8(b)) => add(a, b, fits),
            (Self::U16(a), Self::U16(b)) => add(a, b, fits),
            (Self::U32(a), Self::U32(b)) => add(a, b, fits),
            (Self::U64(a), Self::U64(b)) => add(a, b, fits),
            _ => {}
        }
    }

    /// How many counters are saturated.
    pub(super) fn saturated(&self) -> usize {
        with_counters!(self, c => saturated(c))
    }

    /// Writes the counters, little-endian, to `out` (of [`bytes`](Self::bytes) bytes).
    pub(super) fn encode(&self, out: &mut [u8]) {
        with_counters!(self, c => encode(c, out));
    }

    /// Counters of `width` read from `bytes` (little-endian, whole counters): `width` must be
    /// 8 to 64 bits.
    pub(super) fn decode(width: CounterWidth, bytes: &[u8]) -> Option<Self> {
        Some(match width {
            CounterWidth::Eight => Self::U8(decode(bytes)),
            CounterWidth::Sixteen => Self::U16(decode(bytes)),
            CounterWidth::ThirtyTwo => Self::U32(decode(bytes)),
            CounterWidth::SixtyFour => Self::U64(decode(bytes)),
            CounterWidth::Four => return None,
        })
    }
}

fn add<C: Cell>(a: &mut [C], b: &[C], fits: bool) {
    if fits {
        a.iter_mut().zip(b).for_each(|(a, &b)| *a = a.plus(b));
    } else {
        a.iter_mut().zip(b).for_each(|(a, &b)| *a = a.saturating_plus(b));
    }
}

fn saturated<C: Cell>(counters: &[C]) -> usize {
    counters.iter().filter(|&&c| c == C::MAX).count()
}

fn encode<C: Cell>(counters: &[C], out: &mut [u8]) {
    for (bytes, &c) in out.chunks_exact_mut(C::BYTES).zip(counters) {
        c.put_le(bytes);
    }
}

fn decode<C: Cell>(bytes: &[u8]) -> Box<[C]> {
    bytes.chunks_exact(C::BYTES).map(C::from_le).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_saturate_and_round_trip() {
        assert_eq!((u8::clamped(300), u16::clamped(300), u64::clamped(u64::MAX)), (255, 300, u64::MAX));
        assert_eq!((250_u8.plus(5), 250_u8.saturating_plus(10), u32::MAX.saturating_plus(1)), (255, 255, u32::MAX));
        for width in [CounterWidth::Eight, CounterWidth::Sixteen, CounterWidth::ThirtyTwo, CounterWidth::SixtyFour] {
            let mut counters = Counters::zeroed(width, 3, 3).expect("small");
            with_counters!(&mut counters, c => {
                c[0] = Cell::clamped(7);
                c[2] = Cell::clamped(u64::MAX);
            });
            assert_eq!((counters.width(), counters.saturated()), (width, 1));
            let mut bytes = vec![0; counters.bytes()];
            counters.encode(&mut bytes);
            assert_eq!(bytes.len(), 3 * width.bits() as usize / 8);
            assert_eq!(Counters::decode(width, &bytes), Some(counters));
        }
        assert!(Counters::zeroed(CounterWidth::Four, 3, 3).is_err());
    }
}
