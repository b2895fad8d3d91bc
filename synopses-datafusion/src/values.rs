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
use synopses::hash::Hashable;

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

/// Calls `f` with the row and the hash under `seed` of every non-null value of `array`, in row
/// order.
///
/// # Errors
///
/// A type outside the table of the crate docs (the planner refuses those first).
pub(crate) fn for_each_hash(array: &dyn Array, seed: u64, f: &mut impl FnMut(usize, u64)) -> Result<()> {
    /// Each non-null value's row and hash, from an iterator of optional values.
    fn rows<V>(values: impl Iterator<Item = Option<V>>, f: &mut impl FnMut(usize, u64), hash: impl Fn(V) -> u64) {
        for (row, value) in values.enumerate() {
            if let Some(value) = value {
                f(row, hash(value));
            }
        }
    }
    /// The values of a primitive array, by the Rust type its native values convert to.
    fn primitive<T: ArrowPrimitiveType>(
        array: &dyn Array,
        f: &mut impl FnMut(usize, u64),
        hash: impl Fn(T::Native) -> u64,
    ) {
        let array = array.as_primitive::<T>();
        if array.null_count() == 0 {
            array.values().iter().enumerate().for_each(|(row, &v)| f(row, hash(v)));
        } else {
            rows(array.iter(), f, hash);
        }
    }
    macro_rules! hash_primitive {
        ($t:ty) => {
            primitive::<$t>(array, f, |v| v.hash64(seed))
        };
    }
    let (text, bytes) = (|v: &str| v.hash64(seed), |v: &[u8]| v.hash64(seed));
    use DataType::*;
    match array.data_type() {
        Null => {}
        Boolean => rows(array.as_boolean().iter(), f, |v: bool| v.hash64(seed)),
        Int8 => hash_primitive!(Int8Type),
        Int16 => hash_primitive!(Int16Type),
        Int32 => hash_primitive!(Int32Type),
        Int64 => hash_primitive!(Int64Type),
        UInt8 => hash_primitive!(UInt8Type),
        UInt16 => hash_primitive!(UInt16Type),
        UInt32 => hash_primitive!(UInt32Type),
        UInt64 => hash_primitive!(UInt64Type),
        Float32 => primitive::<Float32Type>(array, f, |v| (canonical(f64::from(v)) as f32).to_bits().hash64(seed)),
        Float64 => primitive::<Float64Type>(array, f, |v| canonical(v).to_bits().hash64(seed)),
        Date32 => hash_primitive!(Date32Type),
        Date64 => hash_primitive!(Date64Type),
        Time32(TimeUnit::Second) => hash_primitive!(Time32SecondType),
        Time32(_) => hash_primitive!(Time32MillisecondType),
        Time64(TimeUnit::Microsecond) => hash_primitive!(Time64MicrosecondType),
        Time64(_) => hash_primitive!(Time64NanosecondType),
        Timestamp(TimeUnit::Second, _) => hash_primitive!(TimestampSecondType),
        Timestamp(TimeUnit::Millisecond, _) => hash_primitive!(TimestampMillisecondType),
        Timestamp(TimeUnit::Microsecond, _) => hash_primitive!(TimestampMicrosecondType),
        Timestamp(TimeUnit::Nanosecond, _) => hash_primitive!(TimestampNanosecondType),
        Duration(TimeUnit::Second) => hash_primitive!(DurationSecondType),
        Duration(TimeUnit::Millisecond) => hash_primitive!(DurationMillisecondType),
        Duration(TimeUnit::Microsecond) => hash_primitive!(DurationMicrosecondType),
        Duration(TimeUnit::Nanosecond) => hash_primitive!(DurationNanosecondType),
        Decimal128(_, _) => hash_primitive!(Decimal128Type),
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
                    f(row, *h);
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
