//! Arrow values to the crate's hashes: every value of a column is hashed by the
//! [`Hashable`] implementation of the Rust type it holds, so a sketch built in SQL and one built
//! in Rust over the same values hold the same state and merge.
//!
//! The mapping, type by type, is the table of the crate docs ("Values"); a type outside it is
//! refused when the query is planned.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Date64Type, Decimal128Type, DurationMicrosecondType,
    DurationMillisecondType, DurationNanosecondType, DurationSecondType, Float32Type, Float64Type, Int8Type, Int16Type,
    Int32Type, Int64Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType,
    TimeUnit, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::common::{DataFusionError, Result, exec_err};
use synopses::hash::{Hashable, hash_words};

/// Whether the values of `data_type` can be hashed (the table of the crate docs).
pub(crate) fn supported(data_type: &DataType) -> bool {
    use DataType::*;
    match data_type {
        Null | Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float32 | Float64 => true,
        Utf8 | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => true,
        Date32 | Date64 | Time32(_) | Time64(_) | Timestamp(_, _) | Duration(_) | Decimal128(_, _) => true,
        Dictionary(_, values) => supported(values),
        _ => false,
    }
}

/// The canonical `f64` of a float: one zero and one NaN, so that SQL's equal values hash alike.
fn canonical(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else if x.is_nan() {
        f64::NAN
    } else {
        x
    }
}

/// Where [`for_each_hash`] delivers the hashes: one row at a time, or a run of consecutive
/// rows at once (a chunk of a column without NULLs). A closure `FnMut(row, hash)` is a sink.
pub(crate) trait HashSink {
    /// The hash of the value in `row`.
    fn one(&mut self, row: usize, hash: u64);

    /// The hashes of the values in rows `first`, `first + 1`, ..., all non-null: by default
    /// [`one`](Self::one) for each.
    #[inline]
    fn run(&mut self, first: usize, hashes: &[u64]) {
        hashes.iter().enumerate().for_each(|(i, &hash)| self.one(first + i, hash));
    }
}

impl<F: FnMut(usize, u64)> HashSink for F {
    #[inline]
    fn one(&mut self, row: usize, hash: u64) {
        self(row, hash);
    }
}

/// Gives `f` the row and the hash under `seed` of every non-null value of `array`, in row
/// order.
///
/// # Errors
///
/// A type outside the table of the crate docs (the planner refuses those first).
pub(crate) fn for_each_hash(array: &dyn Array, seed: u64, f: &mut impl HashSink) -> Result<()> {
    /// Each non-null value's row and hash, from an iterator of optional values.
    fn rows<V>(values: impl Iterator<Item = Option<V>>, f: &mut impl HashSink, hash: impl Fn(V) -> u64) {
        for (row, value) in values.enumerate() {
            if let Some(value) = value {
                f.one(row, hash(value));
            }
        }
    }
    /// The values of a primitive array whose values encode as one word each (see
    /// [`hash_words`]): `word` gives a value's word. A chunk of words is hashed at once, on the
    /// stack; a NULL's slot is hashed with the others (its value is some number) and skipped.
    fn words<T: ArrowPrimitiveType>(
        array: &dyn Array,
        seed: u64,
        f: &mut impl HashSink,
        word: impl Fn(T::Native) -> u64,
    ) {
        const CHUNK: usize = 256;
        let array = array.as_primitive::<T>();
        let nulls = array.logical_nulls().filter(|nulls| nulls.null_count() > 0);
        let mut buffer = [0_u64; CHUNK];
        for (chunk, values) in array.values().chunks(CHUNK).enumerate() {
            let first = chunk * CHUNK;
            let hashes = &mut buffer[..values.len()];
            hashes.iter_mut().zip(values).for_each(|(h, &v)| *h = word(v));
            hash_words(hashes, seed);
            match &nulls {
                None => f.run(first, hashes),
                Some(nulls) => {
                    for (i, &h) in hashes.iter().enumerate() {
                        if nulls.is_valid(first + i) {
                            f.one(first + i, h);
                        }
                    }
                }
            }
        }
    }
    /// A signed type's word: the value sign-extended to 64 bits, as `Hashable` encodes it.
    macro_rules! signed {
        ($t:ty) => {
            words::<$t>(array, seed, f, |v| i64::from(v) as u64)
        };
    }
    /// An unsigned type's word: the value zero-extended to 64 bits.
    macro_rules! unsigned {
        ($t:ty) => {
            words::<$t>(array, seed, f, u64::from)
        };
    }
    let (text, bytes) = (|v: &str| v.hash64(seed), |v: &[u8]| v.hash64(seed));
    use DataType::*;
    match array.data_type() {
        Null => {}
        Boolean => rows(array.as_boolean().iter(), f, |v: bool| v.hash64(seed)),
        Int8 => signed!(Int8Type),
        Int16 => signed!(Int16Type),
        Int32 => signed!(Int32Type),
        Int64 => signed!(Int64Type),
        UInt8 => unsigned!(UInt8Type),
        UInt16 => unsigned!(UInt16Type),
        UInt32 => unsigned!(UInt32Type),
        UInt64 => unsigned!(UInt64Type),
        Float32 => words::<Float32Type>(array, seed, f, |v| u64::from((canonical(f64::from(v)) as f32).to_bits())),
        Float64 => words::<Float64Type>(array, seed, f, |v| canonical(v).to_bits()),
        Date32 => signed!(Date32Type),
        Date64 => signed!(Date64Type),
        Time32(TimeUnit::Second) => signed!(Time32SecondType),
        Time32(_) => signed!(Time32MillisecondType),
        Time64(TimeUnit::Microsecond) => signed!(Time64MicrosecondType),
        Time64(_) => signed!(Time64NanosecondType),
        Timestamp(TimeUnit::Second, _) => signed!(TimestampSecondType),
        Timestamp(TimeUnit::Millisecond, _) => signed!(TimestampMillisecondType),
        Timestamp(TimeUnit::Microsecond, _) => signed!(TimestampMicrosecondType),
        Timestamp(TimeUnit::Nanosecond, _) => signed!(TimestampNanosecondType),
        Duration(TimeUnit::Second) => signed!(DurationSecondType),
        Duration(TimeUnit::Millisecond) => signed!(DurationMillisecondType),
        Duration(TimeUnit::Microsecond) => signed!(DurationMicrosecondType),
        Duration(TimeUnit::Nanosecond) => signed!(DurationNanosecondType),
        Decimal128(_, _) => rows(array.as_primitive::<Decimal128Type>().iter(), f, |v: i128| v.hash64(seed)),
        Utf8 => rows(array.as_string::<i32>().iter(), f, text),
        LargeUtf8 => rows(array.as_string::<i64>().iter(), f, text),
        Utf8View => rows(array.as_string_view().iter(), f, text),
        Binary => rows(array.as_binary::<i32>().iter(), f, bytes),
        LargeBinary => rows(array.as_binary::<i64>().iter(), f, bytes),
        BinaryView => rows(array.as_binary_view().iter(), f, bytes),
        FixedSizeBinary(_) => rows(array.as_fixed_size_binary().iter(), f, bytes),
        Dictionary(_, _) => {
            // Each distinct value of the dictionary is hashed once; its rows look it up.
            let dictionary = array.as_any_dictionary();
            let values = dictionary.values();
            if values.is_empty() {
                // No values, so every key is NULL (and arrow's key normalization would panic).
                return Ok(());
            }
            let mut hashes = vec![None; values.len()];
            hash_values(values.as_ref(), seed, &mut |row, h| {
                if let Some(slot) = hashes.get_mut(row) {
                    *slot = Some(h);
                }
            })?;
            let key_nulls = dictionary.keys().logical_nulls();
            for (row, key) in dictionary.normalized_keys().into_iter().enumerate() {
                if key_nulls.as_ref().is_some_and(|nulls| nulls.is_null(row)) {
                    continue;
                }
                if let Some(Some(h)) = hashes.get(key) {
                    f.one(row, *h);
                }
            }
        }
        other => return exec_err!("values of type {other} cannot be hashed into a sketch"),
    }
    Ok(())
}

/// [`for_each_hash`] through a trait object: a dictionary's values, without a new
/// instantiation for each level of nesting.
fn hash_values(array: &dyn Array, seed: u64, mut f: &mut dyn FnMut(usize, u64)) -> Result<()> {
    for_each_hash(array, seed, &mut f)
}

/// The error of a function given values it cannot hash, for the planner.
pub(crate) fn unsupported(function: &str, data_type: &DataType) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{function}: values of type {data_type} cannot be sketched (integers, floats, booleans, \
         strings, binary, dates, times, timestamps, durations, Decimal128 and dictionaries of those can)"
    ))
}
