//! Cardinality: how many *distinct* items has the stream carried?
//!
//! Counting distinct items exactly needs memory proportional to their number: a set of every
//! item seen. The sketches here answer within a few percent in a few kilobytes, whatever the
//! stream's length, and two sketches of two streams merge into the sketch of their union.
//!
//! | type | memory | relative standard error | use it for |
//! |---|---|---|---|
//! | [`ExaLogLog`] | `3.5·m` bytes encoded (`t = 2, d = 20`), `4·m` in memory; less while small | `0.32/√m` one stream, `0.36/√m` merged; exact while small | the least memory for a given error, counts up to the exa-scale and beyond |
//! | [`UltraLogLog`] | `m` bytes; less while small | `0.66/√m` one stream, `0.76/√m` merged; exact while small | a drop-in for HyperLogLog at 27 % less error per byte |
//! | [`HyperLogLog`] | `m` bytes (dense), less while small | `0.83/√m` one stream, `1.04/√m` merged | compatibility, exact small counts (sparse mode) |
//! | [`FlajoletMartin`] | `4·m` bytes | `0.78/√m` for `n ≫ m` | teaching, the historical baseline |
//!
//! # The idea: remember the rarest hash
//!
//! Hash every item to 64 uniform bits. Duplicates hash alike, so the hashes of a stream with
//! `n` distinct items are `n` independent uniform values, whatever the repetitions. Among `n`
//! uniform values, about one in two ends with a `1`, one in four with `10`, one in `2^k`
//! with a one and `k − 1` zeros: a *rank* of `k`. So if the highest rank we saw is `k`,
//! there were probably about `2^k` distinct items. One such observation is very noisy (it is off by
//! a factor of two with good probability); the algorithms below differ in how they average
//! many of them.
//!
//! ## Flajolet–Martin, 1985: probabilistic counting with stochastic averaging
//!
//! [`FlajoletMartin`] keeps `m` bitmaps. An item's hash picks a bitmap with its low bits and
//! sets bit `r`, where `r` is the number of trailing zeros of the rest (bit `r` is set by
//! about `n/(m·2^(r+1))` items). In each bitmap the position `R` of the lowest *unset* bit
//! estimates `log2(φ·n/m)`; averaging `R` over the bitmaps ("stochastic averaging": one hash
//! per item, not one per bitmap) gives
//!
//! ```text
//!   n̂ = (m / φ) · 2^(mean R),   φ ≈ 0.77351,   relative standard error ≈ 0.78 / √m
//! ```
//!
//! A worked example with `m = 4` bitmaps after a few hundred items:
//!
//! ```text
//!   bitmap 0: ...0 0 1 0 1 1 1 1 1   lowest unset bit R = 5
//!   bitmap 1: ...0 0 0 0 1 1 1 1 1   R = 5
//!   bitmap 2: ...0 0 0 1 0 1 1 1 1   R = 4
//!   bitmap 3: ...0 0 0 0 0 1 1 1 1   R = 4
//!   mean R = 4.5  →  n̂ = 4 / 0.77351 · 2^4.5 ≈ 117
//! ```
//!
//! PCSA is biased when `n` is not much larger than `m`, because many bitmaps are still empty.
//! We subtract Scheuermann and Mauve's correction term `2^(−κ·mean R)` (κ = 1.75), which
//! removes most of the bias between `3m` and `10m`, and below `3m` answer by *linear
//! counting*: with `V` of the `m` bitmaps still empty, `n̂ = ln(V/m) / ln(1 − 1/m)`, whose
//! relative error is `sqrt(m(e^t − t − 1))/n` at `t = n/m` (Whang et al. 1990).
//!
//! ## LogLog, 2003: keep only the maximum
//!
//! A bitmap of 32 bits spends most of its bits on positions that are almost surely set. Durand
//! and Flajolet's LogLog keeps, per bucket, only the *maximum* rank (position of the first one
//! bit) seen: `log2 log2 n` bits, hence the name, and 5 or 6 bits are enough for any
//! realistic `n`. Its arithmetic mean of maxima gives error `1.30/√m`.
//!
//! ## HyperLogLog, 2007: the harmonic mean
//!
//! Flajolet, Fusy, Gandouet and Meunier replaced LogLog's mean by a harmonic mean, which is
//! less sensitive to the occasional large maximum, for error `1.04/√m`. [`HyperLogLog`] with
//! precision `p` has `m = 2^p` registers; each item's hash gives a register (its top `p`
//! bits) and a rank (the position of the lowest one in the remaining `64 − p` bits: one
//! plus its trailing zeros; which end we count from does not matter, every bit is as random
//! as the next), and the register keeps the largest rank it was given:
//!
//! ```text
//!   hash  = 1011 .... .... 0110 1000    p = 4
//!           ^^^^ register 11
//!                             ^ ^^^ rank 4 (three zeros, then a one)
//!   registers[11] = max(registers[11], 4)
//! ```
//!
//! Over a sketch with register values `r_j` the estimator answers about
//! `α·m² / Σ_j 2^(−r_j)`. The original needed two corrections: linear counting for small `n`,
//! and an empirical bias table (HyperLogLog++) in the range between. We use Ertl's improved
//! estimator (2017) instead, which folds both corrections into two quickly converging series
//! (σ for empty registers, τ for saturated ones): it has no bias bump anywhere in the range,
//! needs no table, and its relative standard error is `√(3 ln 2 − 1)/√m ≈ 1.039/√m`.
//!
//! | precision p | registers m | dense bytes | error, one stream (`0.83/√m`) | error, merged (`1.04/√m`) |
//! |---|---|---|---|---|
//! | 4 | 16 | 16 | 20.8 % | 27.7 % |
//! | 10 | 1 024 | 1 KiB | 2.60 % | 3.25 % |
//! | 12 | 4 096 | 4 KiB | 1.30 % | 1.62 % |
//! | 14 | 16 384 | 16 KiB | 0.65 % | 0.81 % |
//! | 16 | 65 536 | 64 KiB | 0.33 % | 0.41 % |
//! | 18 | 262 144 | 256 KiB | 0.16 % | 0.20 % |
//!
//! ### The martingale estimator
//!
//! While a sketch observes one stream, each register change happens with a probability we
//! know exactly: `P = (1/m)·Σ_j 2^(−r_j)`, the chance that a new distinct item raises some
//! register. Adding `1/P` at every change (Ting's "streaming" estimator; Cohen's historic
//! inverse probability, HIP) gives an unbiased estimate with error `√(ln 2)/√m ≈ 0.83/√m`,
//! about 20 % below the register estimator: the same accuracy in 36 % less memory. The
//! martingale describes one stream's history, not the registers: after merging two dense
//! sketches it no longer applies, and [`HyperLogLog::estimate`] falls back to Ertl's estimator
//! (as DataSketches does). Only merging with the empty sketch keeps it. (Replaying a sparse
//! sketch's entries into a dense one looks like observing its items, but a martingale is
//! unbiased only if the order of arrival is independent of the hashes, and the entries' order
//! is not: we tried it, and measured a +0.6 % bias at precision 12.)
//!
//! ### Small sketches stay small
//!
//! A new sketch is *sparse*: an exact set of 32-bit entries (the top 26 bits of the hash and
//! the rank of the rest, as in HyperLogLog++), which answers with the exact count. When the
//! set would take more memory than the registers, at about `3m/16` distinct items, the
//! sketch turns dense by itself and starts its martingale at the exact count. A sketch of a
//! few dozen users takes a few hundred bytes, not 16 KiB.
//!
//! ### Constant-time estimates
//!
//! Both estimators need only three aggregates of the registers: the number of zero registers,
//! the number of saturated ones, and `Σ 2^(−r_j)` (kept exactly, in 128-bit fixed point).
//! Every register change updates them in O(1), so `estimate()` never scans the registers.
//!
//! ### Register packing
//!
//! Ranks never exceed `65 − p ≤ 61`, so 6 bits would hold a register. In memory we use one
//! byte per register: observing is a load, a compare and (rarely) a store, with no shifting
//! across byte boundaries, and merging is a byte-wise maximum that compilers vectorize. The
//! evidence, from `benches/cardinality.rs` on one machine: DataSketches' own 4-bit packing
//! (HLL_4) observes 1.2–1.6× slower than its 8-bit HLL_8 on the same data, and its union
//! of two HLL_4 sketches at precision 14 takes about 65 µs against 14 µs for HLL_8; our
//! byte-wise merge, aggregates included, takes about 1.2 µs (3.8 µs without AVX2). The encoding of [`HyperLogLog::to_bytes`] packs 6 bits per register, so what
//! travels and what is stored is 3/4 of the in-memory size: the compact form where bytes cost
//! most, the fast form where time does.
//!
//! ## UltraLogLog, 2024: remember a little history
//!
//! A HyperLogLog register keeps only the largest rank `u` it was given, in 6 bits of a byte.
//! Ertl's UltraLogLog spends the other 2 bits on what happened just below: whether ranks
//! `u − 1` and `u − 2` occurred too. A register whose `u − 1` and `u − 2` are both set has
//! probably seen many items; one with neither set got to `u` by luck. The register is then
//! `4u + 2·[u−1 seen] + [u−2 seen]`:
//!
//! ```text
//!   ranks observed in register 3:   2, 5, 4, 2, 7      u = 7, 6 not seen, 5 seen
//!   HyperLogLog register:  7                           (6 bits used, 2 idle)
//!   UltraLogLog register:  4·7 + 2·0 + 1 = 29          (0b011101)
//! ```
//!
//! The same byte per register now holds more information, and the estimators use it. The
//! figure of merit is the *memory-variance product* (MVP): bits of state × relative variance of
//! the estimate, the same for every precision; lower is better, and halving it halves the
//! memory needed for a given error.
//!
//! * [`UltraLogLogEstimator::MaximumLikelihood`]: every register says which ranks it knows
//!   occurred and which it knows did not; under a Poisson model each rank `k` occurs in a
//!   register with probability `1 − e^(−λ 2^−k)` independently, so the log-likelihood is
//!   `−λ·α + Σ_k β_k ln(1 − e^(−λ 2^−k))` (α: the probability mass of the ranks known
//!   absent; β_k: how many registers know rank `k` occurred), concave in `λ = n/m`. Newton's
//!   method finds its maximum in a few steps, and dividing by `1 + 0.4815/m` removes the
//!   estimator's first-order bias. MVP 4.63. Unlike HyperLogLog's estimates it is not
//!   constant-time: a pass over the registers (about 3 µs at 4 KiB).
//! * [`UltraLogLogEstimator::Fgra`]: a closed form, `n̂ ∝ (Σ_i η_{h_i}·2^(−τ u_i))^(−1/τ)`,
//!   with `τ ≈ 0.819` and four weights `η` chosen to minimize the variance. MVP 4.89.
//! * The martingale, as for HyperLogLog, while the sketch has seen only its own stream:
//!   MVP 3.47.
//!
//! HyperLogLog's are 8.6 (register estimator, 8-bit registers) and 5.55 (martingale). An
//! UltraLogLog's `u` *is* the HyperLogLog register, so it converts to a HyperLogLog of the same
//! precision ([`UltraLogLog::to_hyperloglog`]).
//!
//! Small UltraLogLog sketches stay small as HyperLogLog's do, with the same entries: a new
//! sketch is sparse, an exact set of HyperLogLog's 32-bit entries, and turns dense at about
//! `3m/16` distinct items, starting its martingale at the exact count
//! ([`UltraLogLog::is_sparse`]). A sparse UltraLogLog converts to the sparse HyperLogLog of the
//! same entries.
//!
//! ## ExaLogLog, 2025: a finer scale and a longer history
//!
//! [`ExaLogLog`] generalizes both steps. With `t` more bits of the hash it splits each
//! power-of-two rank into `2^t` update values (`k = 2^t·z + s + 1`, from `z` trailing zeros
//! and `t` bits `s`), so the maximum tracks `n` on a scale `2^(1/2^t)` instead of 2, and it
//! remembers `d` values below the maximum instead of two. A register takes `6 + t + d` bits.
//! UltraLogLog is `t = 0, d = 2`; HyperLogLog is `t = 0, d = 0`. The same two estimators apply
//! (the likelihood has the same form with the finer probabilities), and Ertl gives the
//! constants in closed form for every `(t, d)`.
//!
//! Its sparse mode keeps entries of the top `26 − t` and the low `t` hash bits and the rank
//! of the rest, enough for every precision up to `26 − t`: with 4-byte registers, up to
//! `3m/4` distinct items stay exact ([`ExaLogLog::is_sparse`]). Above `26 − t` (precisions
//! 25 and 26 for the default `t = 2`) a sketch is born dense: it allocates its 128 or 256 MiB
//! of registers when made.
//!
//! | sketch | bits per register | a register remembers | MVP, merged (register estimator) | MVP, martingale |
//! |---|---|---|---|---|
//! | HyperLogLog, 8-bit registers | 8 | the largest rank | 8.64 | 5.55 |
//! | HyperLogLog, 6-bit registers (our encoding) | 6 | the largest rank | 6.48 | 4.16 |
//! | UltraLogLog | 8 | + ranks `u−1`, `u−2` | 4.63 (FGRA 4.89) | 3.47 |
//! | ExaLogLog `t = 1, d = 9` | 16 | value on a `√2` scale, + 9 below | 3.90 | 3.07 |
//! | ExaLogLog `t = 2, d = 20` (default) | 28 | value on a `2^(1/4)` scale, + 20 below | 3.67 | 2.83 |
//! | ExaLogLog `t = 2, d = 24` | 32 | + 24 below | 3.78 | 3.00 |
//!
//! The standard error is `√(MVP / (bits · m))`. At equal memory:
//!
//! | memory | HyperLogLog (8-bit, merged) | UltraLogLog (merged / one stream) | ExaLogLog 2, 20 (merged / one stream) |
//! |---|---|---|---|
//! | 256 B | 6.5 % (p = 8) | 4.8 % / 4.1 % (p = 8) | 4.5 % / 4.0 % (p = 6, 224 B) |
//! | 1 KiB | 3.2 % (p = 10) | 2.4 % / 2.1 % (p = 10) | 2.3 % / 2.0 % (p = 8, 896 B) |
//! | 4 KiB | 1.6 % (p = 12) | 1.19 % / 1.03 % (p = 12) | 1.13 % / 0.99 % (p = 10, 3.5 KiB) |
//! | 16 KiB | 0.81 % (p = 14) | 0.59 % / 0.51 % (p = 14) | 0.57 % / 0.50 % (p = 12, 14 KiB) |
//! | 64 KiB | 0.41 % (p = 16) | 0.30 % / 0.26 % (p = 16) | 0.28 % / 0.25 % (p = 14, 56 KiB) |
//!
//! ### Which one should I use?
//!
//! * **[`ExaLogLog`]** with the default `t = 2, d = 20` when bytes matter (stored or shipped
//!   sketches, millions of them): the least memory for a given error, and counts up to the
//!   limit of a 64-bit hash (about `2^64` distinct items). Its registers take 4 bytes in
//!   memory (3.5 encoded); its updates take 1.5–1.6 times HyperLogLog's time late in a
//!   stream and 2.1–2.9 times early on (at p = 14, a quarter of the first 10^6 items change a
//!   register); its estimate after a merge is a pass over the registers (about 10 µs at
//!   p = 12).
//! * **[`UltraLogLog`]** when you want HyperLogLog's simplicity (one byte per register,
//!   updates in HyperLogLog's time late in a stream, 1.1–1.3 times early on) with 27 % less
//!   error, or need to hand HyperLogLog sketches to other code.
//! * **[`HyperLogLog`]** when its constant-time estimate matters more than bytes. All three
//!   keep small sketches small and exact: below `3m/16` distinct items for HyperLogLog and
//!   UltraLogLog, `3m/4` for ExaLogLog, at 4 bytes per item.
//!
//! ### The smallest sketches on the wire: entropy-coded registers
//!
//! A register holds far less information than its bits: given `λ = n/m` items per register,
//! a register's value has a known distribution (a Poisson number of items, each raising it to
//! value `k` with probability `2^-k`), whose entropy is about 4 bits for UltraLogLog's 8-bit
//! registers whatever `n` (once `n ≫ m`). [`UltraLogLog::to_compressed_bytes`] writes `λ`
//! (from the estimate of a sample of the registers, to 1/16 of an octave) and codes each
//! register with the Huffman code of that distribution (codewords of at most 11 bits, the
//! rarest values escaped with their byte; four streams of a quarter of the registers each):
//! about 4.05 bits a register, half the plain encoding. That makes it the best distinct counter per
//! serialized byte measured here: after a merge, a memory-variance product of
//! 2.16–2.27 against 2.36–2.46 for DataSketches' CPC, the previous best, and 4.63 for the
//! plain encoding (`benches/examples/per_byte.rs`). Coding costs a table lookup a register, or
//! a pair, each way, from tables built once a process for each scale: 2.4 and 5.8 µs at p = 12
//! to encode and decode, against 0.3 and 2.4 µs for the plain encoding and 4.1 and 10.4 µs
//! for CPC's serialization and deserialization. Store sketches coded; keep them plain in
//! memory (the coded form is an encoding, not a state to update).
//! [`HyperLogLog::to_compressed_bytes`] codes HyperLogLog's registers the same way, against
//! the distribution of a register's maximum alone: 2.9 bits a register instead of 6, a
//! product of 2.95–3.30 after a merge against 6.5–6.95 plain.
//!
//! A sparse sketch's entries (26 hash bits and a rank each) are coded too: sorted, the gaps
//! between their hash bits are nearly geometric of mean `μ = 2^26/n`, which Rice's code (the
//! quotient by `2^b` in unary, then `b` bits; `b = 1 + ⌊log2(0.4812·μ)⌋`, Kiely's choice)
//! writes within 0.03 bits of its entropy `log2(e·μ)`, and a rank is geometric, `P(k) = 2^−k`,
//! which unary writes in its entropy, 2 bits. An entry then costs `log2(2^26/n) + 3.47` bits
//! instead of 32: 302 bytes for 100 items, 2 467 for 1000. CPC's sparse form is smaller
//! still (168 and 972 bytes at `lg_k` = 14), because it keeps only the register index and
//! rank of an item; the entries keep 26 hash bits, which make the small count exact and let a
//! sketch reduce to any coarser precision exactly.
//!
//! # Merging
//!
//! Two sketches with the same precision and seed merge by taking, register by register, the
//! maximum: exactly the registers of one sketch that saw both streams, whatever the split
//! (`tests/laws.rs` checks this with proptest, in the sparse and dense modes and across the
//! switch). [`UltraLogLog`] and [`ExaLogLog`] merge register by register into the union of what
//! each register has seen (the larger maximum, and the histories shifted into line and OR-ed),
//! exactly as well, and [`FlajoletMartin`] by OR-ing the bitmaps.
//!
//! One rule holds for every type: `merge` (and [`Mergeable::merge`](crate::core::Mergeable::merge))
//! accepts only a sketch of the same configuration (precision, `t` and `d`, number of bitmaps,
//! seed), and returns a [`MergeError`](crate::MergeError) otherwise, leaving the sketch as it
//! was. Sketches of different precisions combine by `merge_reducing`, which first `reduce`s
//! the finer one to the coarser precision (exactly: the reduced sketch is the one of that
//! precision that saw the same items) and then merges; the result has the coarser sketch's
//! precision, and so its error. A plain merge never lowers a sketch's accuracy without asking.
//! A merge ends a martingale: afterwards these sketches answer from their registers.
//!
//! Equality (`==`) compares everything an answer depends on, the martingale included, bit for
//! bit: equal sketches give equal answers and equal bytes. A sketch merged from two non-empty
//! parts of a stream holds the registers of the one-pass sketch, but not its martingale, so
//! the two answer different estimates and are not equal.
//!
//! # Limits
//!
//! Every estimate and martingale is a finite number of at most `2^64` (the number of
//! distinct 64-bit hashes, beyond which no sketch of them can tell items apart), and every
//! bound is finite (`estimate · (1 ± z·error)`). A sketch whose registers all hold their
//! largest value, which items crafted to hash that way reach with `m` items, answers exactly
//! that, rather than an infinity.
//!
//! # Adversaries
//!
//! Everything here depends on the hash of each item being random. Items are hashed with
//! seeded xxh3, which is fast and portable but not a cryptographic function: for a known
//! seed, an item of 9 to 16 bytes with any chosen hash can be computed directly
//! (`tests/states.rs` does it). An adversary who knows the seed and chooses the items can
//! therefore make a sketch say what they like:
//!
//! * **Deflate**: any number of distinct items crafted to hash to one register and value
//!   count as one (10^5 such items estimate 1, in every sketch of this family).
//! * **Inflate**: `m` items crafted to raise every register to its largest value make the
//!   estimate `2^64`.
//! * **Merge a crafted sketch**: bytes from an untrusted source decode to any state a
//!   sketch can reach, and merging it raises registers at will; the decoder rejects only
//!   what no stream could produce.
//!
//! The defaults hash with the public [`DEFAULT_SEED`](crate::hash::DEFAULT_SEED), which is
//! right for sketches that must merge with anyone's. On items an adversary chooses, hash with
//! a secret seed (`with_seed`, [`HyperLogLog::with_error_and_seed`]) and keep the sketches
//! and their hashes private: then crafting an item means guessing the seed. An adversary who
//! can add items and read the estimate after each can still, slowly, learn which items move
//! it (Paterson and Raynal 2022): do not expose a live estimate of untrusted input.
//!
//! # When not to use these
//!
//! * You need the exact count, and the set fits in memory: use a `HashSet`.
//! * You need to *remove* items: these sketches only grow.
//! * You need intersections or differences: they follow from unions by inclusion–exclusion
//!   only with an error relative to the *union*, which drowns a small intersection. Use a
//!   sampling sketch (theta, KMV) instead.
//! * You need the best accuracy per byte: use [`ExaLogLog`] or [`UltraLogLog`] rather than
//!   [`HyperLogLog`] (see the table above), and store UltraLogLog with
//!   [`to_compressed_bytes`](UltraLogLog::to_compressed_bytes).
//!
//! # References
//!
//! * P. Flajolet, G. N. Martin. *Probabilistic counting algorithms for data base
//!   applications.* JCSS 31(2), 1985.
//! * K.-Y. Whang, B. T. Vander-Zanden, H. M. Taylor. *A linear-time probabilistic counting
//!   algorithm for database applications.* ACM TODS 15(2), 1990.
//! * D. Scheuermann, M. Mauve. *Near-optimal compression of probabilistic counting sketches for
//!   networking applications.* DIALM-POMC 2007.
//! * M. Durand, P. Flajolet. *LogLog counting of large cardinalities.* ESA 2003.
//! * P. Flajolet, É. Fusy, O. Gandouet, F. Meunier. *HyperLogLog: the analysis of a near-optimal
//!   cardinality estimation algorithm.* AofA 2007.
//! * S. Heule, M. Nunkesser, A. Hall. *HyperLogLog in practice.* EDBT 2013 (sparse mode).
//! * P. Reviriego, D. Ting. *Security of HyperLogLog (HLL) cardinality estimation:
//!   vulnerabilities and protection.* IEEE Communications Letters 24(5), 2020.
//! * K. G. Paterson, M. Raynal. *HyperLogLog: exponentially bad in adversarial settings.*
//!   IEEE EuroS&P 2022.
//! * O. Ertl. *New cardinality estimation algorithms for HyperLogLog sketches.* arXiv:1702.01284,
//!   2017.
//! * O. Ertl. *UltraLogLog: a practical and more space-efficient alternative to HyperLogLog
//!   for approximate distinct counting.* PVLDB 17(7), 2024 (arXiv:2308.16862).
//! * O. Ertl. *ExaLogLog: space-efficient and practical approximate distinct counting up to
//!   the exa-scale.* EDBT 2025 (arXiv:2402.13726).
//! * K. J. Lang. *Back to the future: an even more nearly optimal cardinality estimation
//!   algorithm.* arXiv:1708.06839, 2017 (CPC).
//! * D. A. Huffman. *A method for the construction of minimum-redundancy codes.* Proc. IRE
//!   40(9), 1952; L. L. Larmore and D. S. Hirschberg. *A fast algorithm for optimal
//!   length-limited Huffman codes.* JACM 37(3), 1990 (package-merge); E. S. Schwartz and B.
//!   Kallick. *Generating a canonical prefix encoding.* CACM 7(3), 1964.
//! * D. Ting. *Streamed approximate counting of distinct elements.* KDD 2014; E. Cohen.
//!   *All-distances sketches, revisited: HIP estimators for massive graphs analysis.* 2015.

mod compressed;
pub(crate) mod estimators;
mod exaloglog;
mod flajolet_martin;
mod history;
mod history_codec;
pub(crate) mod hyperloglog;
mod lifecycle;
mod optimal;
pub(crate) mod register_sums;
mod registers;
mod sparse;
mod tally;
mod ultraloglog;

pub use exaloglog::{ExaLogLog, ExaLogLogShape};
pub use flajolet_martin::FlajoletMartin;
pub use hyperloglog::HyperLogLog;
pub use ultraloglog::{UltraLogLog, UltraLogLogEstimator};
