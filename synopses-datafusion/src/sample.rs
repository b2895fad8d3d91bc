//! `sample(x [, k])` and `weighted_sample(x, w [, k])`: `k` of the rows' values (default
//! 100) chosen at random, uniformly or with probability proportional to `w` at each draw
//! (without replacement), as a list of `x`'s type. `x` may be any type; a struct of
//! columns (`sample(named_struct('id', id, 'amount', amount), 10)`) samples whole rows.
//!
//! Each partial aggregate keeps a [`Reservoir`] (or a [`WeightedReservoir`]) and reads only
//! the rows that enter it: about `k·(1 + ln(n/k))` of `n`. Its state is the sampler's bytes in
//! the crate's format, whose items are positions in a second state column holding the
//! sampled values; the final aggregate merges the parts exactly (the `k` smallest random keys
//! of all), so the sample of a query over many partitions, or many machines, is distributed
//! as one pass over all its rows would draw it.
//!
//! Rows whose `x` is NULL are not sampled, nor those whose weight is NULL or 0; a negative,
//! infinite or NaN weight is an error.
//!
//! Every partial aggregate draws from its own random stream, seeded from the operating
//! system's randomness: DataFusion does not tell an aggregate which partition it runs in, and
//! parts on one stream would draw the same keys. A query therefore gives another sample (as
//! uniform) on every run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Expr, Signature, Volatility};
use datafusion::physical_expr::expressions::Literal;
use synopses::core::Weight;
use synopses::sampling::{Reservoir, WeightedReservoir};

/// Rows sampled when the query gives no `k`.
const DEFAULT_SIZE: usize = 100;

/// `sample` or `weighted_sample`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SampleUdaf {
    weighted: bool,
    signature: Signature,
}

impl SampleUdaf {
    pub(crate) fn uniform() -> Self {
        Self { weighted: false, signature: Signature::user_defined(Volatility::Volatile) }
    }

    pub(crate) fn weighted() -> Self {
        Self { weighted: true, signature: Signature::user_defined(Volatility::Volatile) }
    }

    fn usage(&self) -> &'static str {
        if self.weighted {
            "weighted_sample: takes the values, their weights and an optional sample size k"
        } else {
            "sample: takes the values and an optional sample size k"
        }
    }

    /// The function's name, for the accumulator's messages.
    fn function(&self) -> &'static str {
        if self.weighted { "weighted_sample" } else { "sample" }
    }

    /// The position of `k` among the arguments.
    fn k_position(&self) -> usize {
        if self.weighted { 2 } else { 1 }
    }
}

/// The sample's type: a list of the values' type.
fn list_of(value: &DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", value.clone(), true)))
}

/// The sample size `k` of a constant argument, checked.
fn size_of_sample(function: &str, k: &ScalarValue) -> Result<usize> {
    let k = match k {
        ScalarValue::Int64(Some(k)) => *k,
        other => return plan_err!("{function}: the sample size must be an integer, not {other}"),
    };
    usize::try_from(k)
        .ok()
        .filter(|&k| Reservoir::<u32>::new(k, 0).is_ok())
        .ok_or_else(|| DataFusionError::Plan(format!("{function}: a sample of {k} rows is out of range (1..=2^24)")))
}

impl AggregateUDFImpl for SampleUdaf {
    fn name(&self) -> &str {
        self.function()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let name = self.name();
        let (values, rest) = match (self.weighted, arg_types) {
            (false, [values, rest @ ..]) => (vec![values.clone()], rest),
            (true, [values, weights, rest @ ..]) => {
                if !(weights.is_numeric() || *weights == DataType::Null) {
                    return plan_err!("{name}: the weights must be numbers, not {weights}");
                }
                (vec![values.clone(), DataType::Float64], rest)
            }
            _ => return plan_err!("{}", self.usage()),
        };
        match rest {
            [] => Ok(values),
            [k] if k.is_integer() => Ok([values, vec![DataType::Int64]].concat()),
            [k] => plan_err!("{name}: the sample size must be an integer, not {k}"),
            _ => plan_err!("{} ({} arguments given)", self.usage(), arg_types.len()),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(list_of(arg_types.first().unwrap_or(&DataType::Null)))
    }

    /// The sample of no rows is the empty list.
    fn is_nullable(&self) -> bool {
        false
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let value = args.input_fields.first().map_or(DataType::Null, |f| f.data_type().clone());
        Ok(vec![
            Arc::new(Field::new(format_state_name(args.name, "sampler"), DataType::Binary, true)),
            Arc::new(Field::new(format_state_name(args.name, "values"), list_of(&value), true)),
        ])
    }

    /// Checks a constant `k` while the query is planned.
    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        let (name, at) = (self.name().to_string(), self.k_position());
        Some(Box::new(move |call, _| {
            match call.params.args.get(at) {
                Some(Expr::Literal(k, _)) => {
                    size_of_sample(&name, k)?;
                }
                Some(k) if !k.column_refs().is_empty() => {
                    return plan_err!("{name}: the sample size must be a constant");
                }
                _ => {}
            }
            Ok(Expr::AggregateFunction(call))
        }))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let name = self.function();
        let k = match args.exprs.get(self.k_position()) {
            None => DEFAULT_SIZE,
            Some(expr) => match expr.downcast_ref::<Literal>() {
                Some(literal) => size_of_sample(name, literal.value())?,
                None => return plan_err!("{name}: the sample size must be a constant"),
            },
        };
        let value_type = args.exprs.first().map_or(Ok(DataType::Null), |e| e.data_type(args.schema))?;
        let config = |e: synopses::ConfigError| DataFusionError::Plan(format!("{name}: {e}"));
        let sampler = if self.weighted {
            Sampler::Weighted(WeightedReservoir::new(k, fresh_seed()).map_err(config)?)
        } else {
            Sampler::Uniform(Reservoir::new(k, fresh_seed()).map_err(config)?)
        };
        Ok(Box::new(SampleAccumulator { name, value_type, sampler }))
    }
}

/// A seed of its own for every partial aggregate: the standard library's per-process random
/// keys (from the operating system) hashing a process-wide counter.
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    RandomState::new().hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// The sampler of a [`SampleAccumulator`], over the sampled values.
#[derive(Debug)]
enum Sampler {
    Uniform(Reservoir<ScalarValue>),
    Weighted(WeightedReservoir<ScalarValue>),
}

/// The accumulator of `sample` and `weighted_sample`.
#[derive(Debug)]
struct SampleAccumulator {
    name: &'static str,
    value_type: DataType,
    sampler: Sampler,
}

impl SampleAccumulator {
    /// The sampled values, smallest key first (a random order).
    fn values(&self) -> Vec<ScalarValue> {
        match &self.sampler {
            Sampler::Uniform(r) => r.iter().cloned().collect(),
            Sampler::Weighted(r) => r.iter().map(|(v, _)| v.clone()).collect(),
        }
    }
}

/// Reads row `row` of `array` into `failed`'s keeping: the sampler's `make` cannot fail, so
/// the first error is kept and returned after the batch.
fn read(array: &ArrayRef, row: usize, failed: &mut Option<DataFusionError>) -> ScalarValue {
    ScalarValue::try_from_array(array, row).unwrap_or_else(|e| {
        failed.get_or_insert(e);
        ScalarValue::Null
    })
}

impl Accumulator for SampleAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(array) = values.first() else { return Ok(()) };
        let nulls = array.logical_nulls();
        let present = |row: &usize| nulls.as_ref().is_none_or(|n| n.is_valid(*row));
        let mut failed = None;
        match &mut self.sampler {
            Sampler::Uniform(r) => {
                let make = |row| read(array, row, &mut failed);
                if nulls.is_none() {
                    // A range: the rows passed over are not even looked at.
                    r.observe_all_with(0..array.len(), make);
                } else {
                    r.observe_all_with((0..array.len()).filter(present), make);
                }
            }
            Sampler::Weighted(r) => {
                let Some(weights) = values.get(1).and_then(|w| w.as_primitive_opt::<Float64Type>()) else {
                    return exec_err!("{}: the weights are Float64", self.name);
                };
                for (row, w) in weights.iter().enumerate() {
                    if let Some(w) = w.filter(|w| !(w.is_finite() && *w >= 0.0)) {
                        return exec_err!("{}: row {row}: the weight {w} is not a finite number ≥ 0", self.name);
                    }
                }
                let rows = (0..array.len()).filter(present).filter_map(|row| {
                    Some((row, Weight::new(weights.is_valid(row).then(|| weights.value(row))?).ok()?))
                });
                r.observe_all_with(rows, |row| read(array, row, &mut failed));
            }
        }
        failed.map_or(Ok(()), Err)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::List(ScalarValue::new_list_nullable(&self.values(), &self.value_type)))
    }

    fn size(&self) -> usize {
        let (sampler, values) = match &self.sampler {
            Sampler::Uniform(r) => (r.size_in_bytes(), r.iter().map(ScalarValue::size).sum::<usize>()),
            Sampler::Weighted(r) => (r.size_in_bytes(), r.iter().map(|(v, _)| v.size()).sum::<usize>()),
        };
        size_of_val(self) + sampler + values
    }

    /// The sampler with positions for items, and the values at those positions.
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let mut items = Vec::new();
        let mut position = |v: ScalarValue| {
            items.push(v);
            (items.len() - 1) as u32
        };
        let bytes = match &self.sampler {
            Sampler::Uniform(r) => r.clone().map(&mut position).to_bytes(),
            Sampler::Weighted(r) => r.clone().map(&mut position).to_bytes(),
        };
        Ok(vec![
            ScalarValue::Binary(Some(bytes)),
            ScalarValue::List(ScalarValue::new_list_nullable(&items, &self.value_type)),
        ])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let name = self.name;
        let (Some(samplers), Some(values)) =
            (states.first().and_then(|s| s.as_binary_opt::<i32>()), states.get(1).and_then(|s| s.as_list_opt::<i32>()))
        else {
            return exec_err!("{name}: the state is a Binary sampler and a list of values");
        };
        for row in 0..samplers.len() {
            if samplers.is_null(row) {
                continue;
            }
            let fail = |e: String| DataFusionError::Execution(format!("{name}: row {row}: {e}"));
            let (bytes, values) = (samplers.value(row), values.value(row));
            // Each position must name one of the values; the first that does not (or that
            // does not read) fails the merge.
            let mut problem = None;
            let mut value = |at: u32| {
                if (at as usize) < values.len() {
                    let mut failed = None;
                    let v = read(&values, at as usize, &mut failed);
                    if let Some(e) = failed {
                        problem.get_or_insert(e.to_string());
                    }
                    v
                } else {
                    problem.get_or_insert(format!("the state's item {at} is not among its {} values", values.len()));
                    ScalarValue::Null
                }
            };
            let merged = match &mut self.sampler {
                Sampler::Uniform(r) => {
                    let part = Reservoir::<u32>::from_bytes(bytes).map_err(|e| fail(e.to_string()))?.map(&mut value);
                    problem.map_or_else(|| r.merge(&part).map_err(|e| e.to_string()), Err)
                }
                Sampler::Weighted(r) => {
                    let part =
                        WeightedReservoir::<u32>::from_bytes(bytes).map_err(|e| fail(e.to_string()))?.map(&mut value);
                    problem.map_or_else(|| r.merge(&part).map_err(|e| e.to_string()), Err)
                }
            };
            merged.map_err(fail)?;
        }
        Ok(())
    }
}
