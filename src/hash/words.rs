//! Many 64-bit words hashed at once: [`hash_words`].
//!
//! Every integer item of up to 64 bits (and `bool`, `char`, and a float's bits) is encoded as
//! one 8-byte word, and xxh3-64 reads an input of 4 to 8 bytes with a short, branch-free
//! formula (the xxHash specification, "`len` in 4..=8"): with `s` the seed and `w` the word,
//!
//! ```text
//! s'    = s ^ (bswap32(low 32 bits of s) << 32)
//! key   = (secret[8..16] ^ secret[16..24]) − s'        (one constant per seed)
//! x     = rotl(w, 32) ^ key
//! x    ^= rotl(x, 49) ^ rotl(x, 24)
//! x    *= 0x9FB21C651E98DF25
//! x    ^= (x >> 35) + 8
//! x    *= 0x9FB21C651E98DF25
//! hash  = x ^ (x >> 28)
//! ```
//!
//! A loop of that formula over a slice has no branch and no dependence between words, so the
//! compiler turns it into vector code when the CPU has 64-bit vector multiplies: with
//! AVX-512 (`vpmullq`, `vprolq`) eight words at a time, with AVX2 four (each 64-bit multiply
//! made of three 32-bit ones). The entry point picks the widest path the CPU has, at run time.
//!
//! Measured on an AMD EPYC (Zen 4), per word, over 1 024 words: 2.5 ns through
//! [`hash_bytes`](super::hash_bytes) one word at a time, 0.95 ns with AVX2, 0.47 ns with
//! AVX-512. Every path returns exactly `hash_bytes(&w.to_le_bytes(), seed)`; the tests compare
//! all of them with it.

/// `secret[8..16] ^ secret[16..24]` of xxh3's default secret (`kSecret` in the xxHash
/// specification), the only part of the secret that an input of 4 to 8 bytes reads.
const FLIP_4_TO_8: u64 = 0x1CAD_21F7_2C81_017C ^ 0xDB97_9083_E96D_D4DE;

/// xxh3's multiplier of its "rrmxmx" finalizer for short inputs.
const RRMXMX: u64 = 0x9FB2_1C65_1E98_DF25;

/// The per-seed constant that an 8-byte input is xored with.
#[inline(always)]
fn key(seed: u64) -> u64 {
    let seed = seed ^ (u64::from((seed as u32).swap_bytes()) << 32);
    FLIP_4_TO_8.wrapping_sub(seed)
}

/// xxh3-64 of the 8 little-endian bytes of `word`, given the seed's [`key`].
#[inline(always)]
fn hash_word(word: u64, key: u64) -> u64 {
    let mut x = word.rotate_left(32) ^ key;
    x ^= x.rotate_left(49) ^ x.rotate_left(24);
    x = x.wrapping_mul(RRMXMX);
    x ^= (x >> 35).wrapping_add(8);
    x = x.wrapping_mul(RRMXMX);
    x ^ (x >> 28)
}

/// The loop every path compiles, each with its own target features.
#[inline(always)]
fn hash_all(words: &mut [u64], seed: u64) {
    let key = key(seed);
    words.iter_mut().for_each(|w| *w = hash_word(*w, key));
}

/// Replaces each word by its hash under `seed`: afterwards `words[i]` is what `w.hash64(seed)`
/// returned for the word `w` it held, for any integer type that encodes as that word (`u64`,
/// or `i64` by its bits, or a narrower integer widened as the [module docs](crate::hash)
/// say). The same hashes as one call per word, several times faster: the words are hashed
/// several at a time with the CPU's vector multiplies where it has them (AVX-512 or AVX2,
/// detected at run time).
///
/// For a column of numbers: copy a chunk of it into a buffer as words, hash the buffer, and
/// feed the hashes to a sketch's `observe_hashes`.
///
/// ```
/// use synopses::cardinality::UltraLogLog;
/// use synopses::hash::{hash_words, Hashable};
///
/// let column: Vec<i32> = (0..1_000).map(|i| i * 7 - 3_000).collect();
/// let mut words: Vec<u64> = column.iter().map(|&v| i64::from(v) as u64).collect();
/// let mut ull = UltraLogLog::new(12)?;
/// hash_words(&mut words, ull.seed());
/// assert_eq!(words[5], column[5].hash64(ull.seed()));
/// ull.observe_hashes(words);
///
/// let mut by_item = UltraLogLog::new(12)?;
/// by_item.observe_all(&column);
/// assert_eq!(ull, by_item);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub fn hash_words(words: &mut [u64], seed: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            // SAFETY: `x86::avx512` only requires the CPU to support AVX-512F, DQ and VL, which
            // was just checked at run time; everything inside it is safe code.
            #[allow(unsafe_code)]
            return unsafe { x86::avx512(words, seed) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `x86::avx2` only requires the CPU to support AVX2, which was just checked
            // at run time; everything inside it is safe code.
            #[allow(unsafe_code)]
            return unsafe { x86::avx2(words, seed) };
        }
    }
    hash_all(words, seed);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! [`hash_all`](super::hash_all) compiled for wider vectors: the same safe code, which the
    //! compiler vectorizes with the features enabled.

    #[target_feature(enable = "avx512f,avx512dq,avx512vl")]
    pub(super) fn avx512(words: &mut [u64], seed: u64) {
        super::hash_all(words, seed);
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn avx2(words: &mut [u64], seed: u64) {
        super::hash_all(words, seed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::hash_bytes;
    use proptest::prelude::*;

    /// Each path's hashes of `words` under `seed`, with the name of the path: the portable
    /// loop, and each vector path the CPU has.
    fn every_path(words: &[u64], seed: u64) -> Vec<(&'static str, Vec<u64>)> {
        let mut out = Vec::new();
        let mut run = |name, f: &dyn Fn(&mut [u64])| {
            let mut w = words.to_vec();
            f(&mut w);
            out.push((name, w));
        };
        run("hash_words", &|w| hash_words(w, seed));
        run("portable", &|w| hash_all(w, seed));
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                #[allow(unsafe_code)]
                // SAFETY: AVX2 was just checked at run time.
                run("avx2", &|w| unsafe { x86::avx2(w, seed) });
            } else {
                eprintln!("hash_words: this CPU has no AVX2; its path is not tested here");
            }
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
            {
                #[allow(unsafe_code)]
                // SAFETY: AVX-512F, DQ and VL were just checked at run time.
                run("avx512", &|w| unsafe { x86::avx512(w, seed) });
            } else {
                eprintln!("hash_words: this CPU has no AVX-512; its path is not tested here");
            }
        }
        out
    }

    #[test]
    fn every_path_is_xxh3_of_the_word() {
        // Lengths around each vector width and its unrolled multiples, seeds with every byte
        // pattern that the seed's own mixing treats differently.
        let words: Vec<u64> = (0..300_u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 60)).collect();
        for seed in [0, 1, 0xFFFF_FFFF, 0x1_0000_0000, u64::MAX, crate::hash::DEFAULT_SEED] {
            for len in [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 300] {
                let expected: Vec<u64> = words[..len].iter().map(|w| hash_bytes(&w.to_le_bytes(), seed)).collect();
                for (name, got) in every_path(&words[..len], seed) {
                    assert_eq!(got, expected, "{name}, {len} words, seed {seed:#x}");
                }
            }
        }
    }

    proptest! {
        #[test]
        fn any_words_any_seed(words in proptest::collection::vec(any::<u64>(), 0..70), seed in any::<u64>()) {
            let expected: Vec<u64> = words.iter().map(|w| hash_bytes(&w.to_le_bytes(), seed)).collect();
            for (name, got) in every_path(&words, seed) {
                prop_assert_eq!(&got, &expected, "{}", name);
            }
        }
    }
}
