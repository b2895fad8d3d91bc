//! Scalar functions that read a stored sketch: `sketch_estimate`, `sketch_lower_bound` and
//! `sketch_upper_bound` of a distinct count, `sketch_frequency` of a value in a Count-Min
//! sketch, `sketch_contains` of a value in a Bloom filter.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BooleanBuilder, Float64Builder, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use synopses::core::Confidence;

use crate::aggregate::coerce_sketch;
use crate::sketch::Sketch;
use crate::values::{for_each_hash, supported, unsupported};

/// What a function reads of a sketch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Answer {
    Estimate,
    Lower,
    Upper,
    Frequency,
    Contains,
}

/// One of the scalar functions of this module.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ReadSketch {
    name: &'static str,
    answer: Answer,
    signature: Signature,
}

/// The scalar functions of this module.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    [
        ("sketch_estimate", Answer::Estimate),
        ("sketch_lower_bound", Answer::Lower),
        ("sketch_upper_bound", Answer::Upper),
        ("sketch_frequency", Answer::Frequency),
        ("sketch_contains", Answer::Contains),
    ]
    .into_iter()
    .map(|(name, answer)| {
        ScalarUDF::from(ReadSketch { name, answer, signature: Signature::user_defined(Volatility::Immutable) })
    })
    .chain(crate::sample::scalars())
    .chain(crate::quantile::scalars())
    .collect()
}

/// The confidence a bound is asked at: `0.95` for 95 %, or `1`, `2`, `3` standard deviations.
fn confidence(function: &str, value: f64) -> Result<Confidence> {
    match value {
        0.95 => Ok(Confidence::NinetyFivePercent),
        1.0 => Ok(Confidence::OneSigma),
        2.0 => Ok(Confidence::TwoSigma),
        3.0 => Ok(Confidence::ThreeSigma),
        other => plan_err!("{function}: the confidence is 0.95 (95 %) or 1, 2 or 3 (standard deviations), not {other}"),
    }
}

/// The decoded sketch of each row, `S` decoded by `decode`. A constant sketch (the common
/// case: one filter, many values) is decoded once and never copied per row; a column decodes
/// a value once for a run of equal bytes.
pub(crate) enum Decoded<'a, S> {
    Constant(Option<S>),
    Column {
        function: &'static str,
        column: &'a BinaryArray,
        decode: fn(&[u8]) -> Result<S, String>,
        last: Option<(&'a [u8], S)>,
    },
}

impl<'a, S> Decoded<'a, S> {
    /// The sketches of `value`, the first argument of `function`.
    pub(crate) fn new(
        function: &'static str,
        value: &'a ColumnarValue,
        decode: fn(&[u8]) -> Result<S, String>,
    ) -> Result<Self> {
        let decoded = |bytes: &[u8], row: usize| {
            decode(bytes).map_err(|e| DataFusionError::Execution(format!("{function}: row {row}: {e}")))
        };
        match value {
            ColumnarValue::Scalar(ScalarValue::Binary(bytes) | ScalarValue::LargeBinary(bytes)) => {
                Ok(Self::Constant(bytes.as_deref().map(|b| decoded(b, 0)).transpose()?))
            }
            ColumnarValue::Scalar(ScalarValue::Null) => Ok(Self::Constant(None)),
            ColumnarValue::Array(array) => match array.as_binary_opt::<i32>() {
                Some(column) => Ok(Self::Column { function, column, decode, last: None }),
                None => exec_err!("{function}: the sketch must be Binary, not {}", array.data_type()),
            },
            ColumnarValue::Scalar(other) => {
                exec_err!("{function}: the sketch must be Binary, not {}", other.data_type())
            }
        }
    }

    pub(crate) fn get(&mut self, row: usize) -> Result<Option<&S>> {
        match self {
            Self::Constant(sketch) => Ok(sketch.as_ref()),
            Self::Column { function, column, decode, last } => {
                if column.is_null(row) {
                    return Ok(None);
                }
                let bytes = column.value(row);
                if last.as_ref().is_none_or(|(seen, _)| *seen != bytes) {
                    let sketch =
                        decode(bytes).map_err(|e| DataFusionError::Execution(format!("{function}: row {row}: {e}")))?;
                    *last = Some((bytes, sketch));
                }
                Ok(last.as_ref().map(|(_, sketch)| sketch))
            }
        }
    }
}

impl ReadSketch {
    /// The error of a sketch of the wrong kind for this function.
    fn wrong_kind(&self, sketch: &Sketch) -> DataFusionError {
        let wanted = match self.answer {
            Answer::Estimate | Answer::Lower | Answer::Upper => "a distinct count (ull_sketch, hll_sketch, ell_sketch)",
            Answer::Frequency => "a Count-Min sketch (cms_sketch)",
            Answer::Contains => "a Bloom filter (bloom_sketch)",
        };
        DataFusionError::Execution(format!("{}: expected {wanted}, not {}", self.name, sketch.kind_name()))
    }

    /// The distinct-count answers, one a row.
    fn distinct(
        &self,
        sketches: &mut Decoded<'_, Sketch>,
        confidences: Option<&ArrayRef>,
        rows: usize,
    ) -> Result<ArrayRef> {
        let confidences = confidences.and_then(|c| c.as_primitive_opt::<Float64Type>());
        let mut out = Float64Builder::with_capacity(rows);
        for row in 0..rows {
            let Some(sketch) = sketches.get(row)? else {
                out.append_null();
                continue;
            };
            if confidences.is_some_and(|c| c.is_null(row)) {
                out.append_null();
                continue;
            }
            let confidence = match confidences {
                Some(c) => confidence(self.name, c.value(row)).map_err(|e| {
                    DataFusionError::Execution(e.strip_backtrace().replace("Error during planning: ", ""))
                })?,
                None => Confidence::NinetyFivePercent,
            };
            let answer = match self.answer {
                Answer::Estimate => sketch.estimate(),
                Answer::Lower => sketch.bounds(confidence).map(|b| b.lower),
                _ => sketch.bounds(confidence).map(|b| b.upper),
            };
            out.append_value(answer.ok_or_else(|| self.wrong_kind(sketch))?);
        }
        Ok(Arc::new(out.finish()))
    }

    /// The per-value answers (`sketch_frequency`, `sketch_contains`), one a row: the value
    /// hashed under the sketch's own seed, as the sketch hashed the values it saw.
    fn per_value(&self, sketches: &mut Decoded<'_, Sketch>, values: &ArrayRef, rows: usize) -> Result<ArrayRef> {
        let mut answers: Vec<Option<u64>> = vec![None; rows];
        let mut failure = None;
        // The values' hashes depend on each row's sketch seed: hash the rows of one seed at a
        // time (one pass for a constant sketch).
        let mut seeds: Vec<Option<u64>> = Vec::with_capacity(rows);
        for row in 0..rows {
            seeds.push(sketches.get(row)?.map(Sketch::seed));
        }
        let mut distinct_seeds: Vec<u64> = seeds.iter().flatten().copied().collect();
        distinct_seeds.sort_unstable();
        distinct_seeds.dedup();
        for seed in distinct_seeds {
            let mut hashes: Vec<Option<u64>> = vec![None; rows];
            for_each_hash(values.as_ref(), seed, &mut |row, hash| {
                if let Some(slot) = hashes.get_mut(row) {
                    *slot = Some(hash);
                }
            })?;
            for row in 0..rows {
                let (Some(Some(row_seed)), Some(Some(hash))) = (seeds.get(row), hashes.get(row)) else { continue };
                if *row_seed != seed {
                    continue;
                }
                let Some(sketch) = sketches.get(row)? else { continue };
                let answer = match self.answer {
                    Answer::Frequency => sketch.frequency(*hash),
                    _ => sketch.contains(*hash).map(u64::from),
                };
                match (answer, answers.get_mut(row)) {
                    (Some(answer), Some(slot)) => *slot = Some(answer),
                    (Some(_), None) => {}
                    (None, _) => failure = failure.or(Some(self.wrong_kind(sketch))),
                }
            }
        }
        if let Some(failure) = failure {
            return Err(failure);
        }
        Ok(match self.answer {
            Answer::Frequency => Arc::new(answers.into_iter().collect::<UInt64Array>()) as ArrayRef,
            _ => {
                let mut out = BooleanBuilder::with_capacity(rows);
                answers.into_iter().for_each(|a| out.append_option(a.map(|a| a == 1)));
                Arc::new(out.finish())
            }
        })
    }
}

impl ScalarUDFImpl for ReadSketch {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match self.answer {
            Answer::Estimate => coerce_sketch(self.name, arg_types, 0),
            Answer::Lower | Answer::Upper => coerce_sketch(self.name, arg_types, 1),
            Answer::Frequency | Answer::Contains => {
                let [sketch, value] = arg_types else {
                    return plan_err!("{}: takes a sketch and a value", self.name);
                };
                if !supported(value) {
                    return Err(unsupported(self.name, value));
                }
                let mut out = coerce_sketch(self.name, std::slice::from_ref(sketch), 0)?;
                out.push(value.clone());
                Ok(out)
            }
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.answer {
            Answer::Estimate | Answer::Lower | Answer::Upper => DataType::Float64,
            Answer::Frequency => DataType::UInt64,
            Answer::Contains => DataType::Boolean,
        })
    }

    /// Checks a constant confidence while the query is planned.
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        if matches!(self.answer, Answer::Lower | Answer::Upper)
            && let Some(Some(value)) = args.scalar_arguments.get(1)
            && !value.is_null()
        {
            match value.cast_to(&DataType::Float64) {
                Ok(ScalarValue::Float64(Some(c))) => drop(confidence(self.name, c)?),
                _ => return plan_err!("{}: the confidence must be a number, not {value}", self.name),
            }
        }
        Ok(Arc::new(Field::new(self.name, self.return_type(&[])?, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let Some(sketch) = args.args.first() else { return exec_err!("{}: takes a sketch", self.name) };
        let mut sketches = Decoded::new(self.name, sketch, Sketch::from_bytes)?;
        // The other arguments (small values) as arrays of the batch's rows.
        let arrays = args.args.iter().skip(1).map(|a| a.to_array(rows)).collect::<Result<Vec<_>>>()?;
        let out = match self.answer {
            Answer::Estimate | Answer::Lower | Answer::Upper => self.distinct(&mut sketches, arrays.first(), rows)?,
            Answer::Frequency | Answer::Contains => {
                let Some(values) = arrays.first() else {
                    return exec_err!("{}: takes a sketch and a value", self.name);
                };
                self.per_value(&mut sketches, values, rows)?
            }
        };
        Ok(ColumnarValue::Array(out))
    }
}
