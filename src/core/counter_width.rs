//! The width of a counter that saturates: one concept for the counting filter and the
//! Count-Min sketch.

/// How many bits each counter has, and so where it saturates.
///
/// A counter that reaches its maximum is *saturated* and stays there (sticky saturation): it
/// no longer knows its count, so it never goes down and never wraps. A saturated counter can
/// make an answer too large, never too small, except that an answer which *is* the maximum
/// says only "saturated".
///
/// | width | saturates at | [`CountingBloom`](crate::membership::CountingBloom) | [`CountMin`](crate::frequency::CountMin) |
/// |---|---|---|---|
/// | [`Four`](Self::Four) | 15 | the default: sets, 4.8 bytes per item at 1 % | — |
/// | [`Eight`](Self::Eight) | 255 | multisets with moderate repeats | short windows |
/// | [`Sixteen`](Self::Sixteen) | 65 535 | multisets with heavy repeats | totals below 65 536 never saturate |
/// | [`ThirtyTwo`](Self::ThirtyTwo) | 4 294 967 295 | — | totals below 2^32 never saturate |
/// | [`SixtyFour`](Self::SixtyFour) | 2^64 − 1 | — | the default: never saturates before the total does |
///
/// ```
/// use synopses::core::CounterWidth;
///
/// assert_eq!((CounterWidth::Four.bits(), CounterWidth::Four.max()), (4, 15));
/// assert_eq!(CounterWidth::Sixteen.max(), 65_535);
/// assert_eq!(CounterWidth::SixtyFour.max(), u64::MAX);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive] // (Other widths may come.)
pub enum CounterWidth {
    /// 4-bit counters: enough for sets (Fan et al.; see the [family docs](crate::membership)).
    Four,
    /// 8-bit counters.
    Eight,
    /// 16-bit counters.
    Sixteen,
    /// 32-bit counters.
    ThirtyTwo,
    /// 64-bit counters.
    SixtyFour,
}

impl CounterWidth {
    /// Bits per counter: 4, 8, 16, 32 or 64.
    ///
    /// ```
    /// # use synopses::core::CounterWidth;
    /// assert_eq!(CounterWidth::Eight.bits(), 8);
    /// ```
    #[must_use]
    pub const fn bits(self) -> u32 {
        1 << self.log2()
    }

    /// The largest value a counter holds, `2^bits − 1`; a counter that reaches it is
    /// *saturated* and stays there.
    ///
    /// ```
    /// # use synopses::core::CounterWidth;
    /// assert_eq!(CounterWidth::Eight.max(), 255);
    /// ```
    #[must_use]
    pub const fn max(self) -> u64 {
        u64::MAX >> (64 - self.bits())
    }

    /// `log2` of the bits per counter.
    pub(crate) const fn log2(self) -> u32 {
        match self {
            Self::Four => 2,
            Self::Eight => 3,
            Self::Sixteen => 4,
            Self::ThirtyTwo => 5,
            Self::SixtyFour => 6,
        }
    }
}
