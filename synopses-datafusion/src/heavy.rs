//! `heavy_hitters(x [, k])`: the most frequent values, with the bounds of their counts, from
//! a mergeable Misra–Gries summary ([`HeavyHitters`]) of `k` counters (default 100).
//!
//! The answer is a list of `{value, count, lower, upper}`, most frequent first, at most `k`
//! long: `lower` (the summary's count) and `upper` (plus the summary's error, at most
//! `N/(k+1)` for `N` values) bracket the true count, and every value more frequent than
//! `N/(k+1)` is in the list.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, Int64Array, ListArray, StringArray, StructArray, UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Int64Type, UInt64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Expr, Signature, Volatility};
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

    /// The answer: the summary's values, most frequent first, with their bounds.
    fn answer(&self, value_type: &DataType) -> Result<ScalarValue> {
        fn parts<T: synopses::hash::Hashable + Clone + Eq>(
            s: &HeavyHitters<T>,
        ) -> (Vec<T>, Vec<u64>, Vec<u64>, Vec<u64>) {
            let top = s.top(s.capacity());
            let mut out = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for (value, count) in top {
                out.1.push(count);
                out.2.push(count);
                out.3.push(count.saturating_add(s.error()));
                out.0.push(value);
            }
            out
        }
        let (values, counts, lower, upper): (ArrayRef, _, _, _) = match self {
            Self::Int(s) => {
                let (v, c, l, u) = parts(s);
                (Arc::new(Int64Array::from(v)), c, l, u)
            }
            Self::UInt(s) => {
                let (v, c, l, u) = parts(s);
                (Arc::new(UInt64Array::from(v)), c, l, u)
            }
            Self::Text(s) => {
                let (v, c, l, u) = parts(s);
                (Arc::new(StringArray::from(v)), c, l, u)
            }
            Self::Bytes(s) => {
                let (v, c, l, u) = parts(s);
                (Arc::new(BinaryArray::from_iter_values(v)), c, l, u)
            }
        };
        let DataType::List(item) = answer_type(value_type) else { return exec_err!("{NAME}: the answer is a list") };
        let DataType::Struct(fields) = item.data_type().clone() else { return exec_err!("{NAME}: of structs") };
        let len = counts.len();
        let columns: Vec<ArrayRef> = vec![
            values,
            Arc::new(UInt64Array::from(counts)),
            Arc::new(UInt64Array::from(lower)),
            Arc::new(UInt64Array::from(upper)),
        ];
        let items = StructArray::try_new(fields, columns, None)?;
        let list = ListArray::try_new(item, OffsetBuffer::from_lengths([len]), Arc::new(items), None)?;
        Ok(ScalarValue::List(Arc::new(list)))
    }
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
        self.summary.answer(&self.value_type)
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
