//! Scalar functions that read a stored distinct-count sketch: `sketch_estimate`,
//! `sketch_lower_bound` and `sketch_upper_bound`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float64Builder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use synopses::core::Confidence;

use crate::distinct::{Distinct, coerce_sketch};

/// What a function reads of a sketch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Answer {
    Estimate,
    Lower,
    Upper,
}

/// `sketch_estimate(sketch)`, `sketch_lower_bound(sketch [, confidence])` and
/// `sketch_upper_bound(sketch [, confidence])`.
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
    ]
    .into_iter()
    .map(|(name, answer)| {
        ScalarUDF::from(ReadSketch { name, answer, signature: Signature::user_defined(Volatility::Immutable) })
    })
    .collect()
}

/// The confidence a bound is asked at: `0.95` for 95 %, or `1`, `2`, `3` standard deviations.
fn confidence(function: &str, value: f64) -> Result<Confidence> {
    match value {
        0.95 => Ok(Confidence::NinetyFivePercent),
        1.0 => Ok(Confidence::OneSigma),
        2.0 => Ok(Confidence::TwoSigma),
        3.0 => Ok(Confidence::ThreeSigma),
        other => exec_err!("{function}: the confidence is 0.95 (95 %) or 1, 2 or 3 (standard deviations), not {other}"),
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
        coerce_sketch(self.name, arg_types, usize::from(self.answer != Answer::Estimate))
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    /// Checks a constant confidence while the query is planned.
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        if let Some(Some(value)) = args.scalar_arguments.get(1)
            && !value.is_null()
        {
            match value.cast_to(&DataType::Float64) {
                Ok(ScalarValue::Float64(Some(c))) => drop(confidence(self.name, c).map_err(|e| {
                    DataFusionError::Plan(e.strip_backtrace().trim_start_matches("Execution error: ").to_string())
                })?),
                _ => return plan_err!("{}: the confidence must be a number, not {value}", self.name),
            }
        }
        Ok(Arc::new(Field::new(self.name, DataType::Float64, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let Some(sketches) = arrays.first().and_then(|a| a.as_binary_opt::<i32>()) else {
            return exec_err!("{}: the sketch must be Binary", self.name);
        };
        let confidences = arrays.get(1).and_then(|a| a.as_primitive_opt::<Float64Type>());
        let mut out = Float64Builder::with_capacity(sketches.len());
        for row in 0..sketches.len() {
            if sketches.is_null(row) || confidences.is_some_and(|c| c.is_null(row)) {
                out.append_null();
                continue;
            }
            let sketch = Distinct::from_bytes(sketches.value(row))
                .map_err(|e| DataFusionError::Execution(format!("{}: row {row}: {e}", self.name)))?;
            let confidence = match confidences {
                Some(c) => confidence(self.name, c.value(row))?,
                None => Confidence::NinetyFivePercent,
            };
            out.append_value(match self.answer {
                Answer::Estimate => sketch.estimate(),
                Answer::Lower => sketch.bounds(confidence).lower,
                Answer::Upper => sketch.bounds(confidence).upper,
            });
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
