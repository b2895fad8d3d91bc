//! Fallible allocation for the structures whose size a caller chooses: an absurd size is a
//! [`ConfigError`], never an aborted process.

use std::fmt;

use super::ConfigError;

/// A vector of `len` default values, or an error naming `parameter` and `value` when the
/// memory cannot be had. `try_reserve_exact` reports a failed allocation instead of
/// aborting; the values are then written (which commits the memory up front: a structure of
/// this crate is written all over soon enough anyway).
pub(crate) fn filled<T: Clone + Default>(
    len: usize,
    parameter: &'static str,
    value: impl fmt::Display,
) -> Result<Vec<T>, ConfigError> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| ConfigError::new(parameter, value, "a size whose memory can be allocated"))?;
    out.resize(len, T::default());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_size_is_an_error() {
        assert!(filled::<u64>(usize::MAX / 4, "width", "huge").is_err());
        assert_eq!(filled::<u8>(3, "width", 3).ok(), Some(vec![0, 0, 0]));
    }
}
