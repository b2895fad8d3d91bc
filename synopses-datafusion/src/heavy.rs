//! `heavy_hitters(x [, k])`: the most frequent values, with the bounds of their counts, from
//! a mergeable Misra–Gries summary ([`HeavyHitters`]) of `k` counters (default 100).
//!
//! The answer is a list of `{value, count, lower, upper}`, most frequent first, at most `k`
//! long: `lower` (the summary's count) and `upper` (plus the summary's error, at most
//! `N/(k+1)` for `N` values) bracket the true count, and every value more frequent than
//! `N/(k+1)` is in the list.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Int64Array, ListArray, StringArray, StructArray, UInt32Array,
    UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::kernels::boolean::not;
use datafusion::arrow::compute::kernels::nullif::nullif;
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Int64Type, UInt64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, not_impl_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, EmitTo, Expr, GroupsAccumulator, Signature, Volatility};
use datafusion::physical_expr::expressions::Literal;
use synopses::frequency::HeavyHitters;

/// The function's name, in its messages.
const NAME: &str = "heavy_hitters";
/// Counters when the query gives no `k`.
const DEFAULT_CAPACITY: usize = 100;

/// The value type the summary keeps for an input type: integers as `Int64`, unsigned as
/// `UInt64`, text as `Utf8`, bytes as `Binary` (each hashes as the Rust value it then is,
/// which for integers is the value of any width).
fn canonical(data_type: &DataType) -> Option<DataType> {
    use DataType::*;
    match data_type {
        Int8 | Int16 | Int32 | Int64 => Some(Int64),
        UInt8 | UInt16 | UInt32 | UInt64 => Some(UInt64),
        Utf8 | LargeUtf8 | Utf8View => Some(Utf8),
        Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => Some(Binary),
        Dictionary(_, values) => canonical(values),
        Null => Some(Int64),
        _ => None,
    }
}

/// The answer's type: a list of `{value, count, lower, upper}`.
fn answer_type(value: &DataType) -> DataType {
    let fields = Fields::from(vec![
        Field::new("value", value.clone(), false),
        Field::new("count", DataType::UInt64, false),
        Field::new("lower", DataType::UInt64, false),
        Field::new("upper", DataType::UInt64, false),
    ]);
    DataType::List(Arc::new(Field::new("item", DataType::Struct(fields), true)))
}

/// A summary of values of one of the canonical types.
#[derive(Debug, Clone)]
enum Summary {
    Int(HeavyHitters<i64>),
    UInt(HeavyHitters<u64>),
    Text(HeavyHitters<String>),
    Bytes(HeavyHitters<Vec<u8>>),
}

impl Summary {
    fn new(value: &DataType, capacity: usize) -> Result<Self> {
        let config = |e: synopses::ConfigError| DataFusionError::Plan(format!("{NAME}: {e}"));
        Ok(match value {
            DataType::Int64 => Self::Int(HeavyHitters::new(capacity).map_err(config)?),
            DataType::UInt64 => Self::UInt(HeavyHitters::new(capacity).map_err(config)?),
            DataType::Utf8 => Self::Text(HeavyHitters::new(capacity).map_err(config)?),
            DataType::Binary => Self::Bytes(HeavyHitters::new(capacity).map_err(config)?),
            other => return plan_err!("{NAME}: values of type {other} are not counted"),
        })
    }

    /// Observes the non-null values of `array` (of the summary's canonical type).
    fn observe(&mut self, array: &ArrayRef) -> Result<()> {
        match self {
            Self::Int(s) => match array.as_primitive_opt::<Int64Type>() {
                Some(a) => a.iter().flatten().for_each(|v| s.observe(v)),
                None => return exec_err!("{NAME}: expected Int64 values, not {}", array.data_type()),
            },
            Self::UInt(s) => match array.as_primitive_opt::<UInt64Type>() {
                Some(a) => a.iter().flatten().for_each(|v| s.observe(v)),
                None => return exec_err!("{NAME}: expected UInt64 values, not {}", array.data_type()),
            },
            Self::Text(s) => match array.as_string_opt::<i32>() {
                Some(a) => a.iter().flatten().for_each(|v| s.observe(v.to_string())),
                None => return exec_err!("{NAME}: expected Utf8 values, not {}", array.data_type()),
            },
            Self::Bytes(s) => match array.as_binary_opt::<i32>() {
                Some(a) => a.iter().flatten().for_each(|v| s.observe(v.to_vec())),
                None => return exec_err!("{NAME}: expected Binary values, not {}", array.data_type()),
            },
        }
        Ok(())
    }

    fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Int(s) => s.to_bytes(),
            Self::UInt(s) => s.to_bytes(),
            Self::Text(s) => s.to_bytes(),
            Self::Bytes(s) => s.to_bytes(),
        }
    }

    /// Merges the summary encoded in `bytes`, of the same value type and capacity.
    fn merge_bytes(&mut self, bytes: &[u8], row: usize) -> Result<()> {
        let fail = |e: String| DataFusionError::Execution(format!("{NAME}: row {row}: {e}"));
        match self {
            Self::Int(s) => s.merge(&HeavyHitters::from_bytes(bytes).map_err(|e| fail(e.to_string()))?),
            Self::UInt(s) => s.merge(&HeavyHitters::from_bytes(bytes).map_err(|e| fail(e.to_string()))?),
            Self::Text(s) => s.merge(&HeavyHitters::from_bytes(bytes).map_err(|e| fail(e.to_string()))?),
            Self::Bytes(s) => s.merge(&HeavyHitters::from_bytes(bytes).map_err(|e| fail(e.to_string()))?),
        }
        .map_err(|e| fail(e.to_string()))
    }

    fn size(&self) -> usize {
        match self {
            Self::Int(s) => s.size_in_bytes(),
            Self::UInt(s) => s.size_in_bytes(),
            Self::Text(s) => s.size_in_bytes(),
            Self::Bytes(s) => s.size_in_bytes(),
        }
    }
}

/// The answers of `summaries`, one list each: their values, most frequent first, with their
/// bounds.
fn answers(summaries: &[Summary], value_type: &DataType) -> Result<ListArray> {
    /// Appends a summary's items to the columns.
    fn push<T: synopses::hash::Hashable + Clone + Eq>(
        s: &HeavyHitters<T>,
        values: &mut Vec<T>,
        bounds: &mut [Vec<u64>; 3],
    ) -> usize {
        let top = s.top(s.capacity());
        let len = top.len();
        for (value, count) in top {
            bounds[0].push(count);
            bounds[1].push(count);
            bounds[2].push(count.saturating_add(s.error()));
            values.push(value);
        }
        len
    }
    let mut bounds: [Vec<u64>; 3] = Default::default();
    let mut lengths = Vec::with_capacity(summaries.len());
    let (mut ints, mut uints, mut texts, mut bytes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for summary in summaries {
        lengths.push(match summary {
            Summary::Int(s) => push(s, &mut ints, &mut bounds),
            Summary::UInt(s) => push(s, &mut uints, &mut bounds),
            Summary::Text(s) => push(s, &mut texts, &mut bounds),
            Summary::Bytes(s) => push(s, &mut bytes, &mut bounds),
        });
    }
    let values: ArrayRef = match value_type {
        DataType::Int64 => Arc::new(Int64Array::from(ints)),
        DataType::UInt64 => Arc::new(UInt64Array::from(uints)),
        DataType::Utf8 => Arc::new(StringArray::from(texts)),
        DataType::Binary => Arc::new(BinaryArray::from_iter_values(bytes)),
        other => return exec_err!("{NAME}: values of type {other} are not counted"),
    };
    let DataType::List(item) = answer_type(value_type) else { return exec_err!("{NAME}: the answer is a list") };
    let DataType::Struct(fields) = item.data_type().clone() else { return exec_err!("{NAME}: of structs") };
    let [count, lower, upper] = bounds.map(|b| Arc::new(UInt64Array::from(b)) as ArrayRef);
    let items = StructArray::try_new(fields, vec![values, count, lower, upper], None)?;
    Ok(ListArray::try_new(item, OffsetBuffer::from_lengths(lengths), Arc::new(items), None)?)
}

/// `heavy_hitters(x [, k])`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct HeavyHittersUdaf {
    signature: Signature,
}

impl Default for HeavyHittersUdaf {
    fn default() -> Self {
        Self { signature: Signature::user_defined(Volatility::Immutable) }
    }
}

/// The capacity `k` from the query's second argument, if any.
fn capacity(args: &AccumulatorArgs) -> Result<usize> {
    let Some(expr) = args.exprs.get(1) else { return Ok(DEFAULT_CAPACITY) };
    let Some(literal) = expr.downcast_ref::<Literal>() else {
        return plan_err!("{NAME}: the number of counters must be a constant");
    };
    match literal.value() {
        ScalarValue::Int64(Some(k)) => usize::try_from(*k)
            .map_err(|_| DataFusionError::Plan(format!("{NAME}: {k} counters is out of range (1..=2^24)"))),
        other => plan_err!("{NAME}: the number of counters must be an integer, not {other}"),
    }
}

impl AggregateUDFImpl for HeavyHittersUdaf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [values, rest @ ..] = arg_types else { return plan_err!("{NAME}: takes the values and an optional k") };
        let Some(value) = canonical(values) else {
            return plan_err!("{NAME}: values of type {values} are not counted (integers, strings and binary are)");
        };
        match rest {
            [] => Ok(vec![value]),
            [k] if k.is_integer() => Ok(vec![value, DataType::Int64]),
            [k] => plan_err!("{NAME}: the number of counters must be an integer, not {k}"),
            _ => plan_err!("{NAME}: takes the values and an optional k, not {} arguments", arg_types.len()),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let value = arg_types.first().and_then(canonical).unwrap_or(DataType::Int64);
        Ok(answer_type(&value))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "summary"), DataType::Binary, true))])
    }

    /// Checks a constant `k` while the query is planned.
    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        Some(Box::new(|call, _| {
            match call.params.args.get(1) {
                Some(Expr::Literal(ScalarValue::Int64(Some(k)), _)) => {
                    let k = usize::try_from(*k).unwrap_or(0);
                    HeavyHitters::<i64>::new(k).map_err(|e| DataFusionError::Plan(format!("{NAME}: {e}")))?;
                }
                Some(k) if !k.column_refs().is_empty() => {
                    return plan_err!("{NAME}: the number of counters must be a constant");
                }
                _ => {}
            }
            Ok(Expr::AggregateFunction(call))
        }))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        let value_type = args.exprs.first().map_or(Ok(DataType::Int64), |e| e.data_type(args.schema))?;
        let proto = Summary::new(&value_type, capacity(&args)?)?;
        Ok(Box::new(HeavyGroups { value_type, proto, summaries: Vec::new() }))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let value_type = args.exprs.first().map_or(Ok(DataType::Int64), |e| e.data_type(args.schema))?;
        let summary = Summary::new(&value_type, capacity(&args)?)?;
        Ok(Box::new(HeavyAccumulator { value_type, summary }))
    }
}

/// The accumulator of [`HeavyHittersUdaf`].
#[derive(Debug)]
struct HeavyAccumulator {
    value_type: DataType,
    summary: Summary,
}

impl Accumulator for HeavyAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        values.first().map_or(Ok(()), |values| self.summary.observe(values))
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::List(Arc::new(answers(std::slice::from_ref(&self.summary), &self.value_type)?)))
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.summary.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.summary.to_bytes()))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some(column) = states.first().and_then(|c| c.as_binary_opt::<i32>()) else {
            return exec_err!("{NAME}: the state is Binary");
        };
        for (row, bytes) in column.iter().enumerate() {
            if let Some(bytes) = bytes {
                self.summary.merge_bytes(bytes, row)?;
            }
        }
        Ok(())
    }
}

/// The accumulator of [`HeavyHittersUdaf`] under `GROUP BY`: one summary per group in one
/// vector.
#[derive(Debug)]
struct HeavyGroups {
    value_type: DataType,
    proto: Summary,
    summaries: Vec<Summary>,
}

impl HeavyGroups {
    /// The rows of `array` (and their groups) that `opt_filter` keeps.
    fn kept(array: &ArrayRef, opt_filter: Option<&BooleanArray>) -> Result<ArrayRef> {
        match opt_filter {
            // A row the aggregate's FILTER clause leaves out (false or NULL) becomes NULL,
            // which no summary observes.
            Some(filter) => Ok(nullif(array, &not(&is_not_null_and_true(filter))?)?),
            None => Ok(Arc::clone(array)),
        }
    }
}

/// `filter` with NULL read as false.
fn is_not_null_and_true(filter: &BooleanArray) -> BooleanArray {
    filter.iter().map(|keep| Some(keep == Some(true))).collect()
}

impl GroupsAccumulator for HeavyGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.summaries.resize(total_num_groups, self.proto.clone());
        let Some(values) = values.first() else { return Ok(()) };
        let values = Self::kept(values, opt_filter)?;
        // The batch's rows sorted by group (stably: each group's rows stay in row order), then
        // each group's run observed at once: work in proportion to the batch, not the groups.
        let mut order: Vec<(usize, u32)> = group_indices
            .iter()
            .enumerate()
            .filter_map(|(row, &g)| u32::try_from(row).ok().map(|row| (g, row)))
            .collect();
        order.sort_by_key(|&(group, _)| group);
        for run in order.chunk_by(|a, b| a.0 == b.0) {
            let Some(&(group, _)) = run.first() else { continue };
            let rows = UInt32Array::from_iter_values(run.iter().map(|&(_, row)| row));
            let taken = take(values.as_ref(), &rows, None)?;
            if let Some(summary) = self.summaries.get_mut(group) {
                summary.observe(&taken)?;
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(Arc::new(answers(&emit_to.take_needed(&mut self.summaries), &self.value_type)?))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let summaries = emit_to.take_needed(&mut self.summaries);
        Ok(vec![Arc::new(BinaryArray::from_iter_values(summaries.iter().map(Summary::to_bytes)))])
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.summaries.resize(total_num_groups, self.proto.clone());
        let Some(column) = values.first().and_then(|c| c.as_binary_opt::<i32>()) else {
            return exec_err!("{NAME}: the state is Binary");
        };
        for (row, bytes) in column.iter().enumerate() {
            let (Some(bytes), Some(summary)) = (bytes, group_indices.get(row).and_then(|&g| self.summaries.get_mut(g)))
            else {
                continue;
            };
            summary.merge_bytes(bytes, row)?;
        }
        Ok(())
    }

    fn convert_to_state(&self, _values: &[ArrayRef], _opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        not_impl_err!("{NAME}: no state without the aggregate")
    }

    fn size(&self) -> usize {
        size_of_val(self)
            + (self.summaries.capacity() - self.summaries.len()) * size_of::<Summary>()
            + self.summaries.iter().map(Summary::size).sum::<usize>()
    }
}
