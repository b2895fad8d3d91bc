//! The samples: `sample(x [, k])` and `weighted_sample(x, w [, k])` return `k` of the rows'
//! values (default 100) chosen at random, uniformly or with probability proportional to `w` at
//! each draw (without replacement), as a list of `x`'s type. `x` may be any type; a struct of
//! columns (`sample(named_struct('id', id, 'amount', amount), 10)`) samples whole rows.
//!
//! `sample_sketch` and `weighted_sample_sketch` return the sample as a value to store: a
//! struct of the sampler (`sampler`, its bytes in the crate's format, whose items are positions
//! in the list) and the sampled values (`values`). `sample_union` merges stored samples (the
//! sample per day into the month's) and `sketch_sample` reads one's values.
//!
//! Each partial aggregate keeps a [`Reservoir`] (or a [`WeightedReservoir`]) and reads only
//! the rows that enter it: about `k·(1 + ln(n/k))` of `n`. Its state is the stored form; the
//! final aggregate merges the parts exactly (the `k` smallest random keys of all), so the
//! sample of a query over many partitions, or many machines, is distributed as one pass over
//! all its rows would draw it.
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

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, GenericListArray, StructArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Float64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::physical_expr::expressions::Literal;
use synopses::codec::Codec;
use synopses::core::Weight;
use synopses::sampling::{Reservoir, WeightedReservoir};

/// Rows sampled when the query gives no `k`.
const DEFAULT_SIZE: usize = 100;

/// How the rows are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Draw {
    /// Every `k`-subset equally likely: a [`Reservoir`].
    Uniform,
    /// In proportion to the weights at each draw: a [`WeightedReservoir`].
    Weighted,
}

/// What an aggregate returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Output {
    /// The sampled values, as a list.
    List,
    /// The stored form: a struct of the sampler's bytes and the values.
    Sketch,
}

/// The aggregates of this module.
pub(crate) fn aggregates() -> Vec<AggregateUDF> {
    let mut out: Vec<AggregateUDF> = [
        ("sample", Draw::Uniform, Output::List),
        ("weighted_sample", Draw::Weighted, Output::List),
        ("sample_sketch", Draw::Uniform, Output::Sketch),
        ("weighted_sample_sketch", Draw::Weighted, Output::Sketch),
    ]
    .into_iter()
    .map(|(name, draw, output)| {
        AggregateUDF::from(SampleUdaf { name, draw, output, signature: Signature::user_defined(Volatility::Volatile) })
    })
    .collect();
    out.push(AggregateUDF::from(SampleUnion { signature: Signature::user_defined(Volatility::Immutable) }));
    out
}

/// The scalar functions of this module.
pub(crate) fn scalars() -> Vec<ScalarUDF> {
    vec![ScalarUDF::from(SketchSample { signature: Signature::user_defined(Volatility::Immutable) })]
}

/// A list of `value`s.
fn list_of(value: &DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", value.clone(), true)))
}

/// The stored sample of `value`s: `{sampler: Binary, values: List<value>}`.
fn sketch_of(value: &DataType) -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("sampler", DataType::Binary, true),
        Field::new("values", list_of(value), true),
    ]))
}

/// The value type of a stored sample's type, if it is one: the struct `sample_sketch` returns,
/// or the same with the other binary and list layouts (a Parquet file read back gives
/// `BinaryView`), which the functions' coercion casts to it.
fn sampled_type(sketch: &DataType) -> Option<DataType> {
    use DataType::*;
    let DataType::Struct(fields) = sketch else { return None };
    match fields.iter().map(|f| (f.name().as_str(), f.data_type())).collect::<Vec<_>>()[..] {
        [("sampler", Binary | LargeBinary | BinaryView), ("values", List(item) | LargeList(item) | ListView(item))] => {
            Some(item.data_type().clone())
        }
        _ => None,
    }
}

/// The value type of a stored-sample argument, or the planning error of `function`.
fn coerce_stored(function: &str, arg_types: &[DataType]) -> Result<DataType> {
    match arg_types {
        [sketch] => sampled_type(sketch).ok_or_else(|| {
            DataFusionError::Plan(format!(
                "{function}: expected a stored sample (from sample_sketch or weighted_sample_sketch), not {sketch}"
            ))
        }),
        _ => plan_err!("{function}: takes one stored sample ({} arguments given)", arg_types.len()),
    }
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

/// `sample`, `weighted_sample`, `sample_sketch` and `weighted_sample_sketch`: rows in, a
/// sample out.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SampleUdaf {
    name: &'static str,
    draw: Draw,
    output: Output,
    signature: Signature,
}

impl SampleUdaf {
    fn usage(&self) -> String {
        match self.draw {
            Draw::Uniform => format!("{}: takes the values and an optional sample size k", self.name),
            Draw::Weighted => format!("{}: takes the values, their weights and an optional sample size k", self.name),
        }
    }

    /// The position of `k` among the arguments.
    fn k_position(&self) -> usize {
        match self.draw {
            Draw::Uniform => 1,
            Draw::Weighted => 2,
        }
    }
}

impl AggregateUDFImpl for SampleUdaf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let name = self.name;
        let (values, rest) = match (self.draw, arg_types) {
            (Draw::Uniform, [values, rest @ ..]) => (vec![values.clone()], rest),
            (Draw::Weighted, [values, weights, rest @ ..]) => {
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
        let value = arg_types.first().unwrap_or(&DataType::Null);
        Ok(match self.output {
            Output::List => list_of(value),
            Output::Sketch => sketch_of(value),
        })
    }

    /// The sample of no rows is the empty one.
    fn is_nullable(&self) -> bool {
        false
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let value = args.input_fields.first().map_or(DataType::Null, |f| f.data_type().clone());
        Ok(state_fields(args.name, &value))
    }

    /// Checks a constant `k` while the query is planned.
    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        let (name, at) = (self.name, self.k_position());
        Some(Box::new(move |call, _| {
            match call.params.args.get(at) {
                Some(Expr::Literal(k, _)) => {
                    size_of_sample(name, k)?;
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
        let name = self.name;
        let k = match args.exprs.get(self.k_position()) {
            None => DEFAULT_SIZE,
            Some(expr) => match expr.downcast_ref::<Literal>() {
                Some(literal) => size_of_sample(name, literal.value())?,
                None => return plan_err!("{name}: the sample size must be a constant"),
            },
        };
        let value_type = args.exprs.first().map_or(Ok(DataType::Null), |e| e.data_type(args.schema))?;
        let config = |e: synopses::ConfigError| DataFusionError::Plan(format!("{name}: {e}"));
        let sampler = match self.draw {
            Draw::Uniform => Sampler::Uniform(Reservoir::new(k, fresh_seed()).map_err(config)?),
            Draw::Weighted => Sampler::Weighted(WeightedReservoir::new(k, fresh_seed()).map_err(config)?),
        };
        Ok(Box::new(SampleAccumulator {
            name,
            value_type,
            output: self.output,
            stored_input: false,
            sampler: Some(sampler),
        }))
    }
}

/// `sample_union(s)`: the merge of stored samples.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SampleUnion {
    signature: Signature,
}

impl AggregateUDFImpl for SampleUnion {
    fn name(&self) -> &str {
        "sample_union"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        Ok(vec![sketch_of(&coerce_stored("sample_union", arg_types)?)])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(sketch_of(&coerce_stored("sample_union", arg_types)?))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let value = args.input_fields.first().and_then(|f| sampled_type(f.data_type())).unwrap_or(DataType::Null);
        Ok(state_fields(args.name, &value))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let stored = args.exprs.first().map_or(Ok(DataType::Null), |e| e.data_type(args.schema))?;
        let value_type = coerce_stored("sample_union", &[stored])?;
        Ok(Box::new(SampleAccumulator {
            name: "sample_union",
            value_type,
            output: Output::Sketch,
            stored_input: true,
            sampler: None,
        }))
    }
}

/// The partial state of every sample aggregate: the stored form's two columns.
fn state_fields(function: &str, value: &DataType) -> Vec<FieldRef> {
    vec![
        Arc::new(Field::new(format_state_name(function, "sampler"), DataType::Binary, true)),
        Arc::new(Field::new(format_state_name(function, "values"), list_of(value), true)),
    ]
}

/// A seed of its own for every partial aggregate: a process-wide counter hashed under the
/// standard library's random keys (drawn from the operating system once per thread, then
/// stepped at every `RandomState::new`).
pub(crate) fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    RandomState::new().hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A sampler over the sampled values.
#[derive(Debug)]
enum Sampler {
    Uniform(Reservoir<ScalarValue>),
    Weighted(WeightedReservoir<ScalarValue>),
}

impl Sampler {
    /// The sampled values, smallest key first (a random order).
    fn values(&self) -> Vec<ScalarValue> {
        match self {
            Self::Uniform(r) => r.iter().cloned().collect(),
            Self::Weighted(r) => r.iter().map(|(v, _)| v.clone()).collect(),
        }
    }

    fn size(&self) -> usize {
        match self {
            Self::Uniform(r) => r.size_in_bytes() + r.iter().map(ScalarValue::size).sum::<usize>(),
            Self::Weighted(r) => r.size_in_bytes() + r.iter().map(|(v, _)| v.size()).sum::<usize>(),
        }
    }

    /// The stored form: the sampler with positions for items, and the values at those
    /// positions.
    fn stored(&self, value_type: &DataType) -> [ScalarValue; 2] {
        let mut items = Vec::new();
        let mut position = |v: ScalarValue| {
            items.push(v);
            // At most 2^24 items: a position fits.
            (items.len() - 1) as u32
        };
        let bytes = match self {
            Self::Uniform(r) => r.clone().map(&mut position).to_bytes(),
            Self::Weighted(r) => r.clone().map(&mut position).to_bytes(),
        };
        [ScalarValue::Binary(Some(bytes)), ScalarValue::List(ScalarValue::new_list_nullable(&items, value_type))]
    }

    /// The sampler of a stored form: `bytes` (a uniform or weighted sampler, by its family)
    /// whose items are positions in `values`.
    fn decode(bytes: &[u8], values: &ArrayRef) -> std::result::Result<Self, String> {
        let mut problem = None;
        let mut value = |at: u32| {
            if (at as usize) < values.len() {
                ScalarValue::try_from_array(values, at as usize).unwrap_or_else(|e| {
                    problem.get_or_insert(e.to_string());
                    ScalarValue::Null
                })
            } else {
                problem.get_or_insert(format!("the sample's item {at} is not among its {} values", values.len()));
                ScalarValue::Null
            }
        };
        let sampler = match bytes.get(3).copied() {
            Some(Reservoir::<u32>::FAMILY) => {
                Self::Uniform(Reservoir::<u32>::from_bytes(bytes).map_err(|e| e.to_string())?.map(&mut value))
            }
            Some(WeightedReservoir::<u32>::FAMILY) => {
                Self::Weighted(WeightedReservoir::<u32>::from_bytes(bytes).map_err(|e| e.to_string())?.map(&mut value))
            }
            _ => return Err("not the bytes of a sample (sample_sketch, weighted_sample_sketch)".into()),
        };
        problem.map_or(Ok(sampler), Err)
    }

    fn merge(&mut self, other: &Self) -> std::result::Result<(), String> {
        // Every sample draws from a seed of its own: one seed twice is one sample twice (a
        // stored sample merged with itself), whose rows would count twice.
        let twice = "the same sample twice (the random stream of one sample): its rows would count twice";
        match (self, other) {
            (Self::Uniform(a), Self::Uniform(b)) => {
                a.merge(b).map_err(|e| if a.seed() == b.seed() { twice.to_string() } else { e.to_string() })
            }
            (Self::Weighted(a), Self::Weighted(b)) => {
                a.merge(b).map_err(|e| if a.seed() == b.seed() { twice.to_string() } else { e.to_string() })
            }
            _ => Err("cannot merge a uniform sample with a weighted one".into()),
        }
    }
}

/// The accumulator of every sample aggregate.
#[derive(Debug)]
struct SampleAccumulator {
    name: &'static str,
    value_type: DataType,
    output: Output,
    /// Whether the input is stored samples (`sample_union`) rather than rows.
    stored_input: bool,
    /// `None` until `sample_union` sees its first sample.
    sampler: Option<Sampler>,
}

/// Reads row `row` of `array`; the sampler's `make` cannot fail, so the first error is kept
/// in `failed` and returned after the batch.
fn read(array: &ArrayRef, row: usize, failed: &mut Option<DataFusionError>) -> ScalarValue {
    ScalarValue::try_from_array(array, row).unwrap_or_else(|e| {
        failed.get_or_insert(e);
        ScalarValue::Null
    })
}

impl SampleAccumulator {
    /// Merges the stored samples of `samplers` and `values` whose rows `present` keeps.
    fn merge_stored(
        &mut self,
        samplers: &BinaryArray,
        values: &GenericListArray<i32>,
        present: impl Fn(usize) -> bool,
    ) -> Result<()> {
        let name = self.name;
        if samplers.len() != values.len() {
            return exec_err!("{name}: {} samplers and {} lists of values", samplers.len(), values.len());
        }
        for row in (0..samplers.len()).filter(|&row| present(row) && samplers.is_valid(row)) {
            let fail = |e: String| DataFusionError::Execution(format!("{name}: row {row}: {e}"));
            let part = Sampler::decode(samplers.value(row), &values.value(row)).map_err(fail)?;
            match &mut self.sampler {
                Some(sampler) => sampler.merge(&part).map_err(fail)?,
                None => self.sampler = Some(part),
            }
        }
        Ok(())
    }

    /// Observes the rows of `values` (and their weights).
    fn observe(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(array) = values.first() else { return Ok(()) };
        let nulls = array.logical_nulls();
        let present = |row: &usize| nulls.as_ref().is_none_or(|n| n.is_valid(*row));
        let mut failed = None;
        match &mut self.sampler {
            None => return exec_err!("{}: no sampler", self.name),
            Some(Sampler::Uniform(r)) => {
                let make = |row| read(array, row, &mut failed);
                if nulls.is_none() {
                    // A range: the rows passed over are not even looked at.
                    r.observe_all_with(0..array.len(), make);
                } else {
                    r.observe_all_with((0..array.len()).filter(present), make);
                }
            }
            Some(Sampler::Weighted(r)) => {
                let Some(weights) = values.get(1).and_then(|w| w.as_primitive_opt::<Float64Type>()) else {
                    return exec_err!("{}: the weights are Float64", self.name);
                };
                for (row, w) in weights.iter().enumerate() {
                    if let Some(w) = w.filter(|w| !(w.is_finite() && *w >= 0.0)) {
                        return exec_err!("{}: row {row}: the weight {w} is not a finite number ≥ 0", self.name);
                    }
                }
                let weight = |row: usize| Weight::new(weights.is_valid(row).then(|| weights.value(row))?).ok();
                let rows = (0..array.len()).filter(present).filter_map(|row| Some((row, weight(row)?)));
                r.observe_all_with(rows, |row| read(array, row, &mut failed));
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// The stored form, or its two columns NULL and empty before any sample.
    fn stored(&self) -> [ScalarValue; 2] {
        match &self.sampler {
            Some(sampler) => sampler.stored(&self.value_type),
            None => {
                [ScalarValue::Binary(None), ScalarValue::List(ScalarValue::new_list_nullable(&[], &self.value_type))]
            }
        }
    }
}

impl Accumulator for SampleAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if !self.stored_input {
            return self.observe(values);
        }
        let Some(stored) = values.first().and_then(|v| v.as_struct_opt()) else {
            return exec_err!("{}: expected stored samples", self.name);
        };
        let (samplers, lists) = stored_columns(self.name, stored)?;
        self.merge_stored(samplers, lists, |row| stored.is_valid(row))
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        match self.output {
            Output::List => Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &self.sampler.as_ref().map(Sampler::values).unwrap_or_default(),
                &self.value_type,
            ))),
            Output::Sketch if self.sampler.is_none() => ScalarValue::try_from(sketch_of(&self.value_type)),
            Output::Sketch => {
                let DataType::Struct(fields) = sketch_of(&self.value_type) else {
                    return exec_err!("{}: a stored sample is a struct", self.name);
                };
                let columns = self.stored().iter().map(ScalarValue::to_array).collect::<Result<Vec<_>>>()?;
                Ok(ScalarValue::Struct(Arc::new(StructArray::try_new(fields, columns, None)?)))
            }
        }
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.sampler.as_ref().map_or(0, Sampler::size)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(self.stored().to_vec())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(samplers), Some(values)) =
            (states.first().and_then(|s| s.as_binary_opt::<i32>()), states.get(1).and_then(|s| s.as_list_opt::<i32>()))
        else {
            return exec_err!("{}: the state is a Binary sampler and a list of values", self.name);
        };
        self.merge_stored(samplers, values, |_| true)
    }
}

/// The `sampler` and `values` columns of stored samples.
fn stored_columns<'a>(function: &str, stored: &'a StructArray) -> Result<(&'a BinaryArray, &'a GenericListArray<i32>)> {
    let columns = stored.columns();
    match columns.first().zip(columns.get(1)) {
        Some((samplers, values)) if columns.len() == 2 => {
            match (samplers.as_binary_opt::<i32>(), values.as_list_opt::<i32>()) {
                (Some(samplers), Some(values)) => Ok((samplers, values)),
                _ => exec_err!("{function}: expected stored samples, not {}", stored.data_type()),
            }
        }
        _ => exec_err!("{function}: expected stored samples, not {}", stored.data_type()),
    }
}

/// `sketch_sample(s)`: the values of a stored sample, as a list, in the order of their random
/// keys (the order `sample` gives).
#[derive(Debug, PartialEq, Eq, Hash)]
struct SketchSample {
    signature: Signature,
}

impl ScalarUDFImpl for SketchSample {
    fn name(&self) -> &str {
        "sketch_sample"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        Ok(vec![sketch_of(&coerce_stored("sketch_sample", arg_types)?)])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(list_of(&coerce_stored("sketch_sample", arg_types)?))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let value_type = list_of(&coerce_stored("sketch_sample", &[args.arg_fields[0].data_type().clone()])?);
        let DataType::List(item) = &value_type else { return exec_err!("sketch_sample: returns a list") };
        let item_type = item.data_type().clone();
        let array = args.args[0].to_array(args.number_rows)?;
        let Some(stored) = array.as_struct_opt() else {
            return exec_err!("sketch_sample: expected stored samples, not {}", array.data_type());
        };
        if stored.is_empty() {
            return Ok(ColumnarValue::Array(datafusion::arrow::array::new_empty_array(&value_type)));
        }
        let (samplers, lists) = stored_columns("sketch_sample", stored)?;
        let mut rows = Vec::with_capacity(stored.len());
        for row in 0..stored.len() {
            if stored.is_null(row) || samplers.is_null(row) {
                rows.push(ScalarValue::try_from(&value_type)?);
                continue;
            }
            let sampler = Sampler::decode(samplers.value(row), &lists.value(row))
                .map_err(|e| DataFusionError::Execution(format!("sketch_sample: row {row}: {e}")))?;
            rows.push(ScalarValue::List(ScalarValue::new_list_nullable(&sampler.values(), &item_type)));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(rows)?))
    }
}
