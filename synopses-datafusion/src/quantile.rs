//! Quantiles of numbers: `kll_sketch(x [, k])` and `dd_sketch(x [, alpha])` return a sketch,
//! `kll_quantile(x, q [, k])` and `dd_quantile(x, q [, alpha])` the `q`-quantile itself;
//! `sketch_quantile(s, q)` and `sketch_rank(s, x)` read a stored sketch, and `sketch_union`
//! merges stored ones.
//!
//! Values of any numeric type are read as `Float64` (integers beyond 2^53 rounded); NULLs are
//! skipped, and NaN (and, for DDSketch, ±∞) counted as rejected by the sketch rather than
//! ordered.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Float64Array, Float64Builder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, not_impl_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, EmitTo, Expr, GroupsAccumulator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::expressions::Literal;
use synopses::codec::Codec;
use synopses::core::{Mergeable, Operator};
use synopses::quantiles::{DDSketch, Kll, Search};

use crate::aggregate::coerce_sketch;
use crate::scalar::Decoded;

/// The two quantile sketches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// [`Kll`] of `f64`: rank error `2.296 / k^0.9723` (1.33 % at the default k = 200).
    Kll,
    /// [`DDSketch`]: relative value error α (1 % by default).
    Dd,
}

impl Kind {
    /// The parameter's name.
    fn parameter(self) -> &'static str {
        match self {
            Self::Kll => "k",
            Self::Dd => "relative accuracy",
        }
    }

    /// The empty sketch of this kind from its parameter (none for the default). A KLL sketch
    /// draws its coins from a seed of its own: DataFusion runs partial aggregates without
    /// saying which partition they are, and parts sharing a stream would flip the same coins.
    fn build(self, function: &str, param: Option<&ScalarValue>) -> Result<Quantiles> {
        let config = |e: synopses::ConfigError| DataFusionError::Plan(format!("{function}: {e}"));
        let param = param.filter(|p| !p.is_null());
        Ok(match self {
            Self::Kll => {
                let k = match param {
                    Some(p) => match p.cast_to(&DataType::Int64) {
                        Ok(ScalarValue::Int64(Some(k))) => u16::try_from(k).map_err(|_| {
                            DataFusionError::Plan(format!("{function}: k {k} is out of range (8..=65535)"))
                        })?,
                        _ => return plan_err!("{function}: k must be an integer, not {p}"),
                    },
                    None => Kll::<f64>::DEFAULT_K,
                };
                Quantiles::Kll(Kll::new(k, crate::sample::fresh_seed()).map_err(config)?)
            }
            Self::Dd => {
                let alpha = match param {
                    Some(p) => match p.cast_to(&DataType::Float64) {
                        Ok(ScalarValue::Float64(Some(a))) => a,
                        _ => return plan_err!("{function}: the relative accuracy must be a number, not {p}"),
                    },
                    None => 0.01,
                };
                Quantiles::Dd(DDSketch::new(alpha).map_err(config)?)
            }
        })
    }
}

/// A quantile sketch of either kind.
#[derive(Debug, Clone)]
pub(crate) enum Quantiles {
    Kll(Kll<f64>),
    Dd(DDSketch),
}

impl Quantiles {
    /// Whether the family code of an encoding (its fourth byte) is a quantile sketch's.
    pub(crate) fn is_family(family: u8) -> bool {
        family == Kll::<f64>::FAMILY || family == DDSketch::FAMILY
    }

    /// Decodes a KLL sketch of `f64` or a DDSketch, by the family in its header.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        match bytes.get(3).copied() {
            Some(DDSketch::FAMILY) => DDSketch::from_bytes(bytes).map(Self::Dd),
            Some(family) if family == Kll::<f64>::FAMILY => Kll::from_bytes(bytes).map(Self::Kll),
            _ => return Err("not the bytes of a quantile sketch (kll_sketch, dd_sketch)".into()),
        }
        .map_err(|e| e.to_string())
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Kll(s) => s.to_bytes(),
            Self::Dd(s) => s.to_bytes(),
        }
    }

    pub(crate) fn size(&self) -> usize {
        match self {
            Self::Kll(s) => s.size_in_bytes(),
            Self::Dd(s) => Mergeable::size_in_bytes(s),
        }
    }

    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Self::Kll(_) => "a KLL sketch",
            Self::Dd(_) => "a DDSketch",
        }
    }

    /// Merges `other` in: KLL sketches of any k, DDSketches of one configuration.
    pub(crate) fn merge(&mut self, other: &Self) -> Result<(), String> {
        match (self, other) {
            (Self::Kll(a), Self::Kll(b)) => a.merge(b).map_err(|e| e.to_string()),
            (Self::Dd(a), Self::Dd(b)) => a.merge(b).map_err(|e| e.to_string()),
            (a, b) => Err(format!("cannot merge {} into {}", b.kind_name(), a.kind_name())),
        }
    }

    /// Adds the non-null values of `values`; a value the sketch refuses (NaN; for DDSketch
    /// also ±∞) is counted as rejected.
    fn observe(&mut self, values: impl Iterator<Item = f64>) {
        match self {
            Self::Kll(s) => values.for_each(|x| s.observe(x)),
            Self::Dd(s) => values.for_each(|x| s.observe(x)),
        }
    }

    /// The `q`-quantile: KLL's item of inclusive rank `q`, DDSketch's value of rank
    /// `⌊q·(n − 1)⌋`; `None` for an empty sketch.
    pub(crate) fn quantile(&self, q: f64) -> Result<Option<f64>, String> {
        match self {
            Self::Kll(s) => s.quantile(q, Search::Inclusive).map(Option::<&f64>::copied),
            Self::Dd(s) => s.quantile(q),
        }
        .map_err(|e| e.to_string())
    }

    /// The fraction of the values `≤ x`, for a KLL sketch; `None` for an empty one.
    pub(crate) fn rank(&self, x: f64) -> Result<Option<f64>, String> {
        match self {
            Self::Kll(s) => s.rank(&x, Search::Inclusive).map_err(|e| e.to_string()),
            Self::Dd(_) => Err("expected a KLL sketch (kll_sketch): a DDSketch answers quantiles, not ranks".into()),
        }
    }
}

/// What an aggregate over values returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Output {
    /// The sketch's bytes.
    Sketch,
    /// Its quantile at the constant given as the second argument.
    Quantile,
}

/// `kll_sketch`, `dd_sketch`, `kll_quantile` and `dd_quantile`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct QuantileValues {
    name: &'static str,
    kind: Kind,
    output: Output,
    signature: Signature,
}

/// The aggregates of this module.
pub(crate) fn aggregates() -> Vec<AggregateUDF> {
    [
        ("kll_sketch", Kind::Kll, Output::Sketch),
        ("dd_sketch", Kind::Dd, Output::Sketch),
        ("kll_quantile", Kind::Kll, Output::Quantile),
        ("dd_quantile", Kind::Dd, Output::Quantile),
    ]
    .into_iter()
    .map(|(name, kind, output)| {
        AggregateUDF::from(QuantileValues {
            name,
            kind,
            output,
            signature: Signature::user_defined(Volatility::Immutable),
        })
    })
    .collect()
}

/// The scalar functions of this module.
pub(crate) fn scalars() -> Vec<ScalarUDF> {
    [("sketch_quantile", Read::Quantile), ("sketch_rank", Read::Rank)]
        .into_iter()
        .map(|(name, read)| {
            ScalarUDF::from(ReadQuantiles { name, read, signature: Signature::user_defined(Volatility::Immutable) })
        })
        .collect()
}

/// The quantile asked of `*_quantile`: a constant in `[0, 1]`.
fn rank_of(function: &str, value: &ScalarValue) -> Result<f64> {
    match value.cast_to(&DataType::Float64) {
        Ok(ScalarValue::Float64(Some(q))) if (0.0..=1.0).contains(&q) => Ok(q),
        _ => plan_err!("{function}: the quantile must be a constant number in [0, 1], not {value}"),
    }
}

impl QuantileValues {
    /// Where the sketch's parameter is among the arguments.
    fn param_at(&self) -> usize {
        match self.output {
            Output::Sketch => 1,
            Output::Quantile => 2,
        }
    }

    /// The empty sketch and the quantile asked (for `*_quantile`) from the constant arguments.
    fn setup(&self, constants: &[Option<ScalarValue>]) -> Result<(Quantiles, Option<f64>)> {
        let q = match self.output {
            Output::Sketch => None,
            Output::Quantile => match constants.get(1) {
                Some(Some(value)) => Some(rank_of(self.name, value)?),
                _ => return plan_err!("{}: the quantile must be a constant", self.name),
            },
        };
        let param = constants.get(self.param_at()).and_then(Option::as_ref);
        Ok((self.kind.build(self.name, param)?, q))
    }

    /// The constants of the arguments after the values (`None` where not a literal).
    fn constants(args: &AccumulatorArgs) -> Vec<Option<ScalarValue>> {
        args.exprs.iter().map(|e| e.downcast_ref::<Literal>().map(|l| l.value().clone())).collect()
    }
}

impl AggregateUDFImpl for QuantileValues {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let usage = match self.output {
            Output::Sketch => format!("the values, then optionally the {}", self.kind.parameter()),
            Output::Quantile => format!("the values, the quantile, then optionally the {}", self.kind.parameter()),
        };
        let Some(values) = arg_types.first() else { return plan_err!("{}: takes {usage}", self.name) };
        if !(values.is_numeric() || *values == DataType::Null) {
            return plan_err!("{}: the values must be numbers, not {values}", self.name);
        }
        let least = self.param_at();
        if !(least..=least + 1).contains(&arg_types.len()) {
            return plan_err!("{}: takes {usage} ({} arguments given)", self.name, arg_types.len());
        }
        let mut out = vec![DataType::Float64];
        for t in &arg_types[1..] {
            if !(t.is_numeric() || *t == DataType::Null) {
                return plan_err!("{}: takes {usage}; {t} is not a number", self.name);
            }
            out.push(if self.kind == Kind::Kll && out.len() == least { DataType::Int64 } else { DataType::Float64 });
        }
        Ok(out)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.output {
            Output::Sketch => DataType::Binary,
            Output::Quantile => DataType::Float64,
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "sketch"), DataType::Binary, true))])
    }

    /// Checks the constant arguments while the query is planned.
    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        let (name, least) = (self.name, self.param_at());
        let this = QuantileValues { name, kind: self.kind, output: self.output, signature: self.signature.clone() };
        Some(Box::new(move |call, _| {
            let rest = call.params.args.get(1..).unwrap_or_default();
            if rest.iter().any(|p| !p.column_refs().is_empty()) {
                return plan_err!("{name}: the arguments after the values must be constants");
            }
            let mut constants = vec![None];
            constants.extend(rest.iter().map(|p| match p {
                Expr::Literal(value, _) => Some(value.clone()),
                _ => None,
            }));
            if constants.len() >= least && constants[1..].iter().all(Option::is_some) {
                this.setup(&constants)?;
            }
            Ok(Expr::AggregateFunction(call))
        }))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let (sketch, q) = self.setup(&Self::constants(&args))?;
        Ok(Box::new(OneSketch { name: self.name, q, sketch }))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        let (proto, q) = self.setup(&Self::constants(&args))?;
        Ok(Box::new(GroupQuantiles { name: self.name, q, proto, sketches: Vec::new() }))
    }

    /// No values: NULL (an empty sketch's quantile has no value).
    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        ScalarValue::try_from(data_type)
    }
}

/// The non-null values of a `Float64` column.
fn floats<'a>(function: &str, column: &'a ArrayRef) -> Result<&'a Float64Array> {
    match column.as_primitive_opt::<Float64Type>() {
        Some(values) => Ok(values),
        None => exec_err!("{function}: the values come as Float64, not {}", column.data_type()),
    }
}

/// What an aggregate answers of a sketch.
fn answer(function: &str, sketch: &Quantiles, q: Option<f64>) -> Result<ScalarValue> {
    Ok(match q {
        None => ScalarValue::Binary(Some(sketch.to_bytes())),
        Some(q) => ScalarValue::Float64(
            sketch.quantile(q).map_err(|e| DataFusionError::Execution(format!("{function}: {e}")))?,
        ),
    })
}

/// Decodes each non-null stored sketch of `column` and hands it to `merge` with its row.
fn merge_states(
    function: &str,
    column: &ArrayRef,
    mut merge: impl FnMut(usize, &Quantiles) -> Result<(), String>,
) -> Result<()> {
    let Some(column) = column.as_binary_opt::<i32>() else {
        return exec_err!("{function}: the state is Binary, not {}", column.data_type());
    };
    for (row, bytes) in column.iter().enumerate() {
        let Some(bytes) = bytes else { continue };
        let fail = |e: String| DataFusionError::Execution(format!("{function}: row {row}: {e}"));
        let other = Quantiles::from_bytes(bytes).map_err(fail)?;
        merge(row, &other).map_err(fail)?;
    }
    Ok(())
}

/// The accumulator without `GROUP BY`: one sketch.
#[derive(Debug)]
struct OneSketch {
    name: &'static str,
    q: Option<f64>,
    sketch: Quantiles,
}

impl Accumulator for OneSketch {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(column) = values.first() else { return Ok(()) };
        self.sketch.observe(floats(self.name, column)?.iter().flatten());
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        answer(self.name, &self.sketch, self.q)
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.sketch.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.sketch.to_bytes()))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some(column) = states.first() else { return Ok(()) };
        let sketch = &mut self.sketch;
        merge_states(self.name, column, |_, other| sketch.merge(other))
    }
}

/// The accumulator under `GROUP BY`: one sketch per group in one vector. Each group's KLL
/// sketch draws its coins on a stream of its own (a part of the accumulator's).
#[derive(Debug)]
struct GroupQuantiles {
    name: &'static str,
    q: Option<f64>,
    proto: Quantiles,
    sketches: Vec<Quantiles>,
}

impl GroupQuantiles {
    fn grow(&mut self, total: usize) {
        while self.sketches.len() < total {
            let group = self.sketches.len() as u64;
            self.sketches.push(match &self.proto {
                Quantiles::Kll(s) => Quantiles::Kll(s.empty_part(group)),
                Quantiles::Dd(s) => Quantiles::Dd(s.empty_like()),
            });
        }
    }
}

impl GroupsAccumulator for GroupQuantiles {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.grow(total_num_groups);
        let Some(column) = values.first() else { return Ok(()) };
        let values = floats(self.name, column)?;
        for (row, &group) in group_indices.iter().enumerate() {
            // A row the aggregate's FILTER clause leaves out (false or NULL) adds nothing.
            if values.is_null(row) || opt_filter.is_some_and(|f| !f.is_valid(row) || !f.value(row)) {
                continue;
            }
            if let Some(sketch) = self.sketches.get_mut(group) {
                sketch.observe(std::iter::once(values.value(row)));
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sketches = emit_to.take_needed(&mut self.sketches);
        Ok(match self.q {
            None => Arc::new(BinaryArray::from_iter_values(sketches.iter().map(Quantiles::to_bytes))),
            Some(q) => {
                let mut out = Float64Builder::with_capacity(sketches.len());
                for sketch in &sketches {
                    let value =
                        sketch.quantile(q).map_err(|e| DataFusionError::Execution(format!("{}: {e}", self.name)))?;
                    out.append_option(value);
                }
                Arc::new(out.finish())
            }
        })
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let sketches = emit_to.take_needed(&mut self.sketches);
        Ok(vec![Arc::new(BinaryArray::from_iter_values(sketches.iter().map(Quantiles::to_bytes)))])
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.grow(total_num_groups);
        let Some(column) = values.first() else { return Ok(()) };
        let sketches = &mut self.sketches;
        merge_states(self.name, column, |row, other| {
            match group_indices.get(row).and_then(|&group| sketches.get_mut(group)) {
                Some(sketch) => sketch.merge(other),
                None => Ok(()),
            }
        })
    }

    fn convert_to_state(&self, _values: &[ArrayRef], _opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        not_impl_err!("{}: no state without the aggregate", self.name)
    }

    fn size(&self) -> usize {
        size_of_val(self)
            + (self.sketches.capacity() - self.sketches.len()) * size_of::<Quantiles>()
            + self.sketches.iter().map(Quantiles::size).sum::<usize>()
    }
}

/// What a scalar function reads of a stored sketch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Read {
    Quantile,
    Rank,
}

/// `sketch_quantile(s, q)` and `sketch_rank(s, x)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ReadQuantiles {
    name: &'static str,
    read: Read,
    signature: Signature,
}

impl ScalarUDFImpl for ReadQuantiles {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 2 {
            let what = if self.read == Read::Quantile { "a quantile" } else { "a value" };
            return plan_err!("{}: takes a sketch and {what}", self.name);
        }
        coerce_sketch(self.name, arg_types, 1)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let [sketch, arg] = args.args.as_slice() else { return exec_err!("{}: takes two arguments", self.name) };
        let mut sketches = Decoded::new(self.name, sketch, Quantiles::from_bytes)?;
        let arg = arg.to_array(rows)?;
        let Some(arg) = arg.as_primitive_opt::<Float64Type>() else {
            return exec_err!("{}: the second argument comes as Float64, not {}", self.name, arg.data_type());
        };
        let mut out = Float64Builder::with_capacity(rows);
        for row in 0..rows {
            let Some(sketch) = sketches.get(row)? else {
                out.append_null();
                continue;
            };
            if arg.is_null(row) {
                out.append_null();
                continue;
            }
            let x = arg.value(row);
            let answer = match self.read {
                Read::Quantile => sketch.quantile(x),
                Read::Rank => sketch.rank(x),
            };
            out.append_option(
                answer.map_err(|e| DataFusionError::Execution(format!("{}: row {row}: {e}", self.name)))?,
            );
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
