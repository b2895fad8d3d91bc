//! Fallible allocation for the structures whose size a caller chooses: an absurd size is a
//! [`ConfigError`], never an aborted process.
//!
//! Rust's collections abort the process when the allocator refuses them; only
//! `try_reserve` reports the refusal. A zeroed allocation, though, should stay lazy (the
//! system maps zero pages as they are first written, so a large filter costs memory as it
//! fills, not when it is made), and `vec![0; n]` is lazy but cannot fail softly. So we ask
//! first: [`check`] reserves the bytes with `try_reserve_exact` and gives them back, without
//! touching them, and only then is the structure allocated. The system refuses what it cannot
//! provide (an address-space limit such as `ulimit -v`, or, under Linux's default overcommit
//! heuristic, more than its memory and swap at once), and the caller gets an error instead of
//! an abort.

use std::fmt;

use super::ConfigError;

/// Whether `bytes` can be allocated now: an error naming `parameter` and `value` if not.
pub(crate) fn check(bytes: usize, parameter: &'static str, value: impl fmt::Display) -> Result<(), ConfigError> {
    let mut probe: Vec<u8> = Vec::new();
    probe
        .try_reserve_exact(bytes)
        .map_err(|_| ConfigError::new(parameter, value, "a size whose memory can be allocated"))
}

/// A vector of `len` zeros (the default values of the integer types), allocated lazily
/// after [`check`] found the memory.
pub(crate) fn zeroed<T: Clone + Default>(
    len: usize,
    parameter: &'static str,
    value: impl fmt::Display,
) -> Result<Vec<T>, ConfigError> {
    let bytes = len.saturating_mul(size_of::<T>());
    check(bytes, parameter, value)?;
    Ok(vec![T::default(); len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_size_is_an_error() {
        assert!(zeroed::<u64>(usize::MAX / 4, "width", "huge").is_err());
        assert!(check(usize::MAX, "width", "huge").is_err());
        assert_eq!(zeroed::<u8>(3, "width", 3).ok(), Some(vec![0, 0, 0]));
    }
}
