//! Exact aggregates of a whole register array, for merges and decoding: the number of zero
//! registers, of saturated ones, and `Σ 2^(64 − r)` over the others (the estimators' three
//! inputs, see `estimators.rs`).
//!
//! A merge is a byte-wise maximum, after which the aggregates must be recounted, and the
//! recount, not the maximum, is most of a merge's time. A scalar histogram does it; on x86-64
//! CPUs with AVX2 the vector path below does it several times faster. Both give the same
//! exact integers; the tests compare them. The scalar path's [`histogram`] serves
//! UltraLogLog's byte registers too (its recount after a merge, and its FGRA estimator).

/// `(zeros, saturated, Σ 2^(64 − r) over registers r < saturated_rank)` of `registers`,
/// every register being at most 63.
pub(crate) fn register_sums(registers: &[u8], saturated_rank: u8) -> (u32, u32, u128) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `avx2::register_sums` only requires the CPU to support AVX2, which was just
        // checked at run time; everything inside it is safe code.
        #[allow(unsafe_code)]
        return unsafe { avx2::register_sums(registers, saturated_rank) };
    }
    scalar(registers, saturated_rank)
}

/// How many of `registers` have each `key` (below `B`), counted in interleaved histograms:
/// registers often repeat a value, and one histogram would make each increment wait for the
/// previous one's store. Fewer than `4 · B` registers take one histogram: clearing and adding
/// up more would cost more than the wait; fewer than `16 · B`, four; more, eight (of 1, 4, 8
/// and 16 histograms, eight were the fastest on the registers of a real sketch of 2^14 of
/// them; at 2^10, four took 0.43 µs against eight's 0.54, and at 2^12 they were level).
#[inline]
pub(crate) fn histogram<T: Copy, const B: usize>(registers: &[T], key: impl Fn(T) -> usize) -> [u32; B] {
    if registers.len() < 4 * B {
        let mut histogram = [0u32; B];
        registers.iter().for_each(|&r| histogram[key(r)] += 1);
        return histogram;
    }
    if registers.len() < 16 * B {
        return interleaved::<T, B, 4>(registers, key);
    }
    interleaved::<T, B, 8>(registers, key)
}

/// [`histogram`] in `K` histograms, register `i` counted in histogram `i mod K`, then summed.
fn interleaved<T: Copy, const B: usize, const K: usize>(registers: &[T], key: impl Fn(T) -> usize) -> [u32; B] {
    let mut histograms = [[0u32; B]; K];
    let mut chunks = registers.chunks_exact(K);
    for chunk in &mut chunks {
        for (h, &r) in histograms.iter_mut().zip(chunk) {
            h[key(r)] += 1;
        }
    }
    for &r in chunks.remainder() {
        histograms[0][key(r)] += 1;
    }
    let mut total = histograms[0];
    for h in &histograms[1..] {
        total.iter_mut().zip(h).for_each(|(t, n)| *t += n);
    }
    total
}

/// The portable path, from a [`histogram`].
fn scalar(registers: &[u8], saturated_rank: u8) -> (u32, u32, u128) {
    let counts = histogram::<u8, 64>(registers, |r| usize::from(r & 63));
    let saturated = usize::from(saturated_rank);
    let inverse_sum = (0..saturated).map(|r| u128::from(counts[r]) << (64 - r)).sum();
    (counts[0], counts[saturated], inverse_sum)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! Write each register as `r = 8a + b`. Then `2^(64 − r) = 2^(57 − 8a) · 2^(7 − b)`, and
    //! `2^(7 − b)` is a byte (1 to 128) that one shuffle looks up for 32 registers at once.
    //! For each "band" `a` present, the weights of the registers in that band are masked and
    //! summed by `vpsadbw` into 64-bit lanes, exactly; the bands are then shifted into place.
    //!
    //! ```text
    //!   r      = 0b_aaa_bbb          (r <= 63)
    //!   weight = 128 >> bbb          (vpshufb on a 16-entry table)
    //!   band a : sum of weights where r >> 3 == a   (vpcmpeqb, vpand, vpsadbw)
    //!   Σ 2^(64 − r) = Σ_a band_a << (57 − 8a)
    //! ```

    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    pub(super) fn register_sums(registers: &[u8], saturated_rank: u8) -> (u32, u32, u128) {
        // Only the bands up to the highest register need a pass: usually 3 or 4 of 8.
        let highest = registers.iter().copied().max().unwrap_or(0) & 63;
        let (mut inverse_sum, zeros, saturated) = match highest >> 3 {
            0 => sums::<1>(registers, saturated_rank),
            1 => sums::<2>(registers, saturated_rank),
            2 => sums::<3>(registers, saturated_rank),
            3 => sums::<4>(registers, saturated_rank),
            4 => sums::<5>(registers, saturated_rank),
            5 => sums::<6>(registers, saturated_rank),
            6 => sums::<7>(registers, saturated_rank),
            _ => sums::<8>(registers, saturated_rank),
        };
        let (mut zeros, mut saturated) = (zeros as u32, saturated as u32);
        // The registers after the last whole vector (all of them below 32 registers).
        for &r in registers.chunks_exact(32).remainder() {
            inverse_sum += 1u128 << (64 - u32::from(r & 63));
            zeros += u32::from(r == 0);
            saturated += u32::from(r == saturated_rank);
        }
        // Saturated registers were counted in the sum like the others; they do not belong.
        inverse_sum -= u128::from(saturated) << (64 - u32::from(saturated_rank));
        (zeros, saturated, inverse_sum)
    }

    /// `Σ 2^(64 − r)` from `B` bands, the zero count and the saturated count, over the whole
    /// vectors.
    #[target_feature(enable = "avx2")]
    fn sums<const B: usize>(registers: &[u8], saturated_rank: u8) -> (u128, u64, u64) {
        #[rustfmt::skip]
        let weights = _mm256_setr_epi8(
            -128, 64, 32, 16, 8, 4, 2, 1, -128, 64, 32, 16, 8, 4, 2, 1,
            -128, 64, 32, 16, 8, 4, 2, 1, -128, 64, 32, 16, 8, 4, 2, 1,
        );
        let (seven, one, zero) = (_mm256_set1_epi8(7), _mm256_set1_epi8(1), _mm256_setzero_si256());
        let saturated_v = _mm256_set1_epi8(saturated_rank as i8);
        let mut bands = [zero; B];
        let (mut zeros, mut saturated) = (zero, zero);
        for chunk in registers.chunks_exact(32) {
            // Four little-endian words: the compiler makes this one unaligned vector load.
            let word = |k: usize| {
                let mut w = [0u8; 8];
                w.copy_from_slice(&chunk[8 * k..8 * k + 8]);
                i64::from_le_bytes(w)
            };
            let r = _mm256_setr_epi64x(word(0), word(1), word(2), word(3));
            let weight = _mm256_shuffle_epi8(weights, _mm256_and_si256(r, seven));
            // A 16-bit shift moves the high byte's low bits into the low byte's top bits; the
            // mask keeps only each byte's own bits 3..5.
            let band = _mm256_and_si256(_mm256_srli_epi16::<3>(r), seven);
            for (a, sum) in bands.iter_mut().enumerate() {
                let in_band = _mm256_cmpeq_epi8(band, _mm256_set1_epi8(a as i8));
                *sum = _mm256_add_epi64(*sum, _mm256_sad_epu8(_mm256_and_si256(in_band, weight), zero));
            }
            let is_zero = _mm256_and_si256(_mm256_cmpeq_epi8(r, zero), one);
            zeros = _mm256_add_epi64(zeros, _mm256_sad_epu8(is_zero, zero));
            let is_saturated = _mm256_and_si256(_mm256_cmpeq_epi8(r, saturated_v), one);
            saturated = _mm256_add_epi64(saturated, _mm256_sad_epu8(is_saturated, zero));
        }
        let inverse_sum = bands.iter().enumerate().map(|(a, &v)| u128::from(lanes(v)) << (57 - 8 * a)).sum();
        (inverse_sum, lanes(zeros), lanes(saturated))
    }

    /// The sum of the four 64-bit lanes.
    #[target_feature(enable = "avx2")]
    fn lanes(v: __m256i) -> u64 {
        let parts = [
            _mm256_extract_epi64::<0>(v),
            _mm256_extract_epi64::<1>(v),
            _mm256_extract_epi64::<2>(v),
            _mm256_extract_epi64::<3>(v),
        ];
        parts.iter().map(|&x| x as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The histogram is the count of each key, at every length around those where it changes
    /// its number of interleaved histograms, and with a remainder of each size.
    #[test]
    fn the_histogram_counts_each_key() {
        let mut state = 7;
        for len in [0, 1, 7, 1023, 1024, 1031, 4095, 4096, 4103, 20_000] {
            let registers: Vec<u8> = (0..len).map(|_| (splitmix(&mut state) % 40) as u8).collect();
            let mut expected = [0u32; 256];
            registers.iter().for_each(|&r| expected[usize::from(r)] += 1);
            assert_eq!(histogram::<u8, 256>(&registers, usize::from), expected, "{len} registers");
        }
    }

    /// The dispatching path (AVX2 where the CPU has it) agrees with the scalar one, for every
    /// precision, register spreads that reach every band count, and saturated registers. On a
    /// CPU without AVX2 both sides are the scalar path and this checks nothing; the project's
    /// machines (and CI's) have AVX2.
    #[test]
    fn every_path_gives_the_same_sums() {
        let mut state = 7;
        for p in 4..=18_u32 {
            let m = 1usize << p;
            let saturated_rank = (65 - p) as u8;
            for spread in [1_u64, 2, 8, 16, 24, 40, 62] {
                let registers: Vec<u8> =
                    (0..m).map(|_| (splitmix(&mut state) % spread).min(u64::from(saturated_rank)) as u8).collect();
                assert_eq!(
                    register_sums(&registers, saturated_rank),
                    scalar(&registers, saturated_rank),
                    "p {p} spread {spread}"
                );
            }
        }
    }
}
