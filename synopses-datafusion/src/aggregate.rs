//! The aggregates: over values, `ull_sketch`, `hll_sketch`, `ell_sketch`, `cms_sketch` and
//! `bloom_sketch` return a sketch, `distinct_count` (and its `_hll` and `_ell` variants) its
//! estimate; over stored sketches, `sketch_union` merges them.

use std::fmt::Debug;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BooleanArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, not_impl_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, Expr, GroupsAccumulator, Signature, Volatility,
};
use datafusion::physical_expr::expressions::Literal;

use crate::quantile::Quantiles;
use crate::sketch::{Kind, Param, Sketch};
use crate::values::{HashSink, for_each_hash, supported, unsupported};

/// What an aggregate over values returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Output {
    /// The sketch's bytes (`Binary`).
    Sketch,
    /// Its estimate, rounded (`UInt64`), as `approx_distinct` returns.
    Count,
}

/// `ull_sketch`, `hll_sketch`, `ell_sketch`, `cms_sketch`, `bloom_sketch`, `distinct_count`,
/// `distinct_count_hll` and `distinct_count_ell`: values in, a sketch (or its estimate) out.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SketchValues {
    name: String,
    kind: Kind,
    output: Output,
    signature: Signature,
}

impl SketchValues {
    fn new(name: &str, kind: Kind, output: Output) -> Self {
        Self { name: name.into(), kind, output, signature: Signature::user_defined(Volatility::Immutable) }
    }
}

/// The aggregates of this module.
pub(crate) fn aggregates() -> Vec<AggregateUDF> {
    let over_values = [
        ("ull_sketch", Kind::Ull, Output::Sketch),
        ("hll_sketch", Kind::Hll, Output::Sketch),
        ("ell_sketch", Kind::Ell, Output::Sketch),
        ("cms_sketch", Kind::CountMin, Output::Sketch),
        ("bloom_sketch", Kind::Bloom, Output::Sketch),
        ("distinct_count", Kind::Ull, Output::Count),
        ("distinct_count_hll", Kind::Hll, Output::Count),
        ("distinct_count_ell", Kind::Ell, Output::Count),
    ];
    let mut out: Vec<AggregateUDF> = over_values
        .into_iter()
        .map(|(name, kind, output)| AggregateUDF::from(SketchValues::new(name, kind, output)))
        .collect();
    out.push(AggregateUDF::from(SketchUnion::default()));
    out.push(AggregateUDF::from(crate::heavy::HeavyHittersUdaf::default()));
    out.extend(crate::sample::aggregates());
    out.extend(crate::quantile::aggregates());
    out
}

/// The empty sketch of `function` from its parameter expressions (after the values), which
/// must be constants.
fn sketch_of(function: &str, kind: Kind, args: &AccumulatorArgs) -> Result<Sketch> {
    let params = args
        .exprs
        .iter()
        .skip(1)
        .map(|expr| match expr.downcast_ref::<Literal>() {
            Some(literal) => Ok(literal.value().clone()),
            None => plan_err!("{function}: the parameters must be constants"),
        })
        .collect::<Result<Vec<_>>>()?;
    kind.build(function, &params)
}

/// The state of the sketch aggregates: one nullable `Binary` column of sketch bytes.
fn state_field(function: &str) -> FieldRef {
    Arc::new(Field::new(format_state_name(function, "sketch"), DataType::Binary, true))
}

impl AggregateUDFImpl for SketchValues {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let params = self.kind.params();
        let names: Vec<&str> = params.iter().map(|p| p.name()).collect();
        let [values, rest @ ..] = arg_types else {
            return plan_err!("{}: takes the values, then optionally {}", self.name, names.join(", "));
        };
        if !supported(values) {
            return Err(unsupported(&self.name, values));
        }
        if !rest.is_empty() && rest.len() != params.len() {
            return plan_err!(
                "{}: takes the values, then optionally {} ({} arguments given)",
                self.name,
                names.join(", "),
                arg_types.len()
            );
        }
        let mut out = vec![values.clone()];
        for (t, param) in rest.iter().zip(params) {
            out.push(match param {
                Param::Int(_) if t.is_integer() || *t == DataType::Null => DataType::Int64,
                Param::Real(_) if t.is_numeric() || *t == DataType::Null => DataType::Float64,
                Param::Int(what) => return plan_err!("{}: the {what} must be an integer, not {t}", self.name),
                Param::Real(what) => return plan_err!("{}: the {what} must be a number, not {t}", self.name),
            });
        }
        Ok(out)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.output {
            Output::Sketch => DataType::Binary,
            Output::Count => DataType::UInt64,
        })
    }

    /// A count is never NULL (0 for no values); a sketch is the empty one for no values, but
    /// a plan that needs a value for an aggregate over nothing gets NULL
    /// ([`default_value`](Self::default_value)).
    fn is_nullable(&self) -> bool {
        self.output == Output::Sketch
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![state_field(args.name)])
    }

    /// Checks the parameters while the query is planned (the optimizer's simplification
    /// pass), leaving the call as it is: bad parameters then fail before any row is read. A
    /// parameter that is not yet folded into a literal is checked when the aggregate is set
    /// up; one that reads a column is refused here.
    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        let (name, kind) = (self.name.clone(), self.kind);
        Some(Box::new(move |call, _| {
            let params = call.params.args.get(1..).unwrap_or_default();
            if params.iter().any(|p| !p.column_refs().is_empty()) {
                return plan_err!("{name}: the parameters must be constants");
            }
            let literals: Vec<ScalarValue> = params
                .iter()
                .filter_map(|p| match p {
                    Expr::Literal(value, _) => Some(value.clone()),
                    _ => None,
                })
                .collect();
            if literals.len() == params.len() {
                kind.build(&name, &literals)?;
            }
            Ok(Expr::AggregateFunction(call))
        }))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let sketch = sketch_of(&self.name, self.kind, &args)?;
        Ok(Box::new(ValuesAccumulator { name: self.name.clone(), output: self.output, sketch, hashes: Vec::new() }))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        let proto = sketch_of(&self.name, self.kind, &args)?;
        Ok(Box::new(GroupSketches {
            name: self.name.clone(),
            output: self.output,
            proto,
            sketches: Vec::new(),
            held: 0,
            offsets: Vec::new(),
        }))
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        match self.output {
            Output::Count => Ok(ScalarValue::UInt64(Some(0))),
            Output::Sketch => ScalarValue::try_from(data_type),
        }
    }
}

/// The accumulator of [`SketchValues`]: one sketch, fed the hashes of the values.
#[derive(Debug)]
struct ValuesAccumulator {
    name: String,
    output: Output,
    sketch: Sketch,
    /// Scratch of `update_batch`: hashes that come one at a time, gathered for the sketch's
    /// batch loop (kept between batches, so that a batch allocates nothing).
    hashes: Vec<u64>,
}

/// Feeds a batch's hashes to a sketch in row order: a run of hashes straight through the
/// sketch's batch loop, single hashes gathered in `pending` first (one call of the batch loop
/// per batch, not one dispatch per value).
struct Feed<'a> {
    sketch: &'a mut Sketch,
    pending: &'a mut Vec<u64>,
}

impl Feed<'_> {
    /// Observes the gathered hashes.
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.sketch.observe_hashes(self.pending);
            self.pending.clear();
        }
    }
}

impl HashSink for Feed<'_> {
    fn one(&mut self, _row: usize, hash: u64) {
        self.pending.push(hash);
    }

    fn run(&mut self, _first: usize, hashes: &[u64]) {
        self.flush();
        self.sketch.observe_hashes(hashes);
    }
}

/// Merges every non-null sketch of a `Binary` column into `into` (`None` takes the first).
fn merge_column(function: &str, column: &ArrayRef, into: &mut Option<Sketch>) -> Result<()> {
    let Some(column) = column.as_binary_opt::<i32>() else {
        return exec_err!("{function}: sketches come as Binary, not {}", column.data_type());
    };
    for (row, bytes) in column.iter().enumerate() {
        let Some(bytes) = bytes else { continue };
        let other =
            Sketch::from_bytes(bytes).map_err(|e| DataFusionError::Execution(format!("{function}: row {row}: {e}")))?;
        match into {
            Some(sketch) => sketch.merge(&other).map_err(|e| DataFusionError::Execution(format!("{function}: {e}")))?,
            None => *into = Some(other),
        }
    }
    Ok(())
}

impl Accumulator for ValuesAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(values) = values.first() else { return Ok(()) };
        let mut sink = Feed { sketch: &mut self.sketch, pending: &mut self.hashes };
        for_each_hash(values.as_ref(), sink.sketch.seed(), &mut sink)?;
        sink.flush();
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(match self.output {
            Output::Sketch => ScalarValue::Binary(Some(self.sketch.to_bytes())),
            Output::Count => ScalarValue::UInt64(Some(rounded(self.sketch.estimate().unwrap_or_default()))),
        })
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.sketch.size() + self.hashes.capacity() * size_of::<u64>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.sketch.to_bytes()))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some(column) = states.first() else { return Ok(()) };
        let mut merged = Some(self.sketch.clone());
        merge_column(&self.name, column, &mut merged)?;
        if let Some(sketch) = merged {
            self.sketch = sketch;
        }
        Ok(())
    }
}

/// The accumulator of [`SketchValues`] under `GROUP BY`: one sketch per group in one vector,
/// not one boxed accumulator per group. A new group's sketch is a copy of an empty one (an
/// empty sparse sketch: a few bytes until the group sees values).
///
/// It keeps the sketches' total size as it goes (DataFusion asks for it after every batch):
/// a batch re-measures only the groups it touched, so its cost follows the batch, not the
/// number of groups.
#[derive(Debug)]
struct GroupSketches {
    name: String,
    output: Output,
    proto: Sketch,
    sketches: Vec<Sketch>,
    /// The sum of the sketches' sizes.
    held: usize,
    /// Scratch of `update_batch`'s counting sort, one entry per group, all zeros between
    /// batches.
    offsets: Vec<usize>,
}

impl GroupSketches {
    /// The sketches `emit_to` asks for, taken out of the accumulator.
    fn take(&mut self, emit_to: EmitTo) -> Vec<Sketch> {
        let taken = emit_to.take_needed(&mut self.sketches);
        self.held = self.held.saturating_sub(taken.iter().map(Sketch::size).sum());
        taken
    }

    /// Makes room for `total` groups, each new one an empty sketch.
    fn grow(&mut self, total: usize) {
        let new = total.saturating_sub(self.sketches.len());
        self.held = self.held.saturating_add(new.saturating_mul(self.proto.size()));
        self.sketches.resize(total, self.proto.clone());
    }

    /// Runs `update` on the sketches, keeping `held` up to date for the groups it may touch.
    fn tracked(&mut self, group_indices: &[usize], update: impl FnOnce(&mut [Sketch]) -> Result<()>) -> Result<()> {
        let mut touched = group_indices.to_vec();
        touched.sort_unstable();
        touched.dedup();
        let measure =
            |sketches: &[Sketch]| touched.iter().filter_map(|&g| sketches.get(g)).map(Sketch::size).sum::<usize>();
        let before = measure(&self.sketches);
        let outcome = update(&mut self.sketches);
        let after = measure(&self.sketches);
        self.held = self.held.saturating_sub(before).saturating_add(after);
        outcome
    }
}

/// The sketches' bytes, as a `Binary` column.
fn sketch_column(sketches: &[Sketch]) -> ArrayRef {
    Arc::new(BinaryArray::from_iter_values(sketches.iter().map(Sketch::to_bytes)))
}

impl GroupsAccumulator for GroupSketches {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.grow(total_num_groups);
        let Some(values) = values.first() else { return Ok(()) };
        // Each kept row's group and hash, in row order.
        let mut kept: Vec<(usize, u64)> = Vec::with_capacity(values.len());
        for_each_hash(values.as_ref(), self.proto.seed(), &mut |row, hash| {
            // A row the aggregate's FILTER clause leaves out (false or NULL) adds nothing.
            if opt_filter.is_some_and(|filter| !filter.is_valid(row) || !filter.value(row)) {
                return;
            }
            if let Some(&group) = group_indices.get(row) {
                kept.push((group, hash));
            }
        })?;
        // A counting sort by group, stable (each group's hashes stay in row order), in work
        // proportional to the batch: `offsets` is all zeros between batches.
        self.offsets.resize(total_num_groups, 0);
        let mut touched = Vec::new();
        for &(group, _) in &kept {
            if let Some(count) = self.offsets.get_mut(group) {
                touched.extend((*count == 0).then_some(group));
                *count += 1;
            }
        }
        let mut start = 0;
        for &group in &touched {
            if let Some(offset) = self.offsets.get_mut(group) {
                (*offset, start) = (start, start + *offset);
            }
        }
        let mut sorted = vec![0_u64; kept.len()];
        for &(group, hash) in &kept {
            if let Some(offset) = self.offsets.get_mut(group) {
                if let Some(slot) = sorted.get_mut(*offset) {
                    *slot = hash;
                }
                *offset += 1;
            }
        }
        // Each group's run through its sketch's batch loop; `offsets` ends each run.
        let mut begin = 0;
        for &group in &touched {
            let (Some(offset), Some(sketch)) = (self.offsets.get_mut(group), self.sketches.get_mut(group)) else {
                continue;
            };
            let end = std::mem::take(offset);
            let before = sketch.size();
            sketch.observe_hashes(sorted.get(begin..end).unwrap_or_default());
            self.held = self.held.saturating_sub(before).saturating_add(sketch.size());
            begin = end;
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sketches = self.take(emit_to);
        Ok(match self.output {
            Output::Sketch => sketch_column(&sketches),
            Output::Count => Arc::new(UInt64Array::from_iter_values(
                sketches.iter().map(|s| rounded(s.estimate().unwrap_or_default())),
            )),
        })
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![sketch_column(&self.take(emit_to))])
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.grow(total_num_groups);
        let Some(column) = values.first() else { return Ok(()) };
        let Some(column) = column.as_binary_opt::<i32>() else {
            return exec_err!("{}: sketches come as Binary, not {}", self.name, column.data_type());
        };
        let name = self.name.clone();
        self.tracked(group_indices, |sketches| {
            for (row, bytes) in column.iter().enumerate() {
                let (Some(bytes), Some(&group)) = (bytes, group_indices.get(row)) else { continue };
                let other = Sketch::from_bytes(bytes)
                    .map_err(|e| DataFusionError::Execution(format!("{name}: row {row}: {e}")))?;
                if let Some(sketch) = sketches.get_mut(group) {
                    sketch.merge(&other).map_err(|e| DataFusionError::Execution(format!("{name}: {e}")))?;
                }
            }
            Ok(())
        })
    }

    fn convert_to_state(&self, _values: &[ArrayRef], _opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        not_impl_err!("{}: no state without the aggregate", self.name)
    }

    fn size(&self) -> usize {
        size_of_val(self) + (self.sketches.capacity() - self.sketches.len()) * size_of::<Sketch>() + self.held
    }
}

/// An estimate as a count: rounded, and never negative (the estimators are not).
pub(crate) fn rounded(estimate: f64) -> u64 {
    // `as` saturates, and takes NaN to 0.
    estimate.round() as u64
}

/// `sketch_union(sketch)`: the merge of stored sketches of one kind and configuration (a
/// rollup), `NULL` when there are none.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SketchUnion {
    signature: Signature,
}

impl Default for SketchUnion {
    fn default() -> Self {
        Self { signature: Signature::user_defined(Volatility::Immutable) }
    }
}

impl AggregateUDFImpl for SketchUnion {
    fn name(&self) -> &str {
        "sketch_union"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce_sketch(self.name(), arg_types, 0)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![state_field(args.name)])
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(UnionAccumulator { sketch: None }))
    }
}

/// A stored sketch `sketch_union` merges: one the hashing aggregates build, or a quantile
/// sketch (which keeps numbers, not hashes).
#[derive(Debug)]
enum Stored {
    Hashed(Sketch),
    Quantiles(Quantiles),
}

impl Stored {
    /// Decodes the bytes of any kind, by the family in their header.
    fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        match bytes.get(3) {
            Some(&family) if Quantiles::is_family(family) => Quantiles::from_bytes(bytes).map(Self::Quantiles),
            _ => Sketch::from_bytes(bytes).map(Self::Hashed),
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Hashed(s) => s.to_bytes(),
            Self::Quantiles(s) => s.to_bytes(),
        }
    }

    fn size(&self) -> usize {
        match self {
            Self::Hashed(s) => s.size(),
            Self::Quantiles(s) => s.size(),
        }
    }

    fn merge(&mut self, other: &Self) -> Result<(), String> {
        match (self, other) {
            (Self::Hashed(a), Self::Hashed(b)) => a.merge(b),
            (Self::Quantiles(a), Self::Quantiles(b)) => a.merge(b),
            (Self::Hashed(a), Self::Quantiles(b)) => {
                Err(format!("cannot merge {} into {}", b.kind_name(), a.kind_name()))
            }
            (Self::Quantiles(a), Self::Hashed(b)) => {
                Err(format!("cannot merge {} into {}", b.kind_name(), a.kind_name()))
            }
        }
    }
}

/// The argument types of a function of one sketch and `extra` further arguments (coerced to
/// `Float64`): a sketch is binary.
pub(crate) fn coerce_sketch(function: &str, arg_types: &[DataType], extra: usize) -> Result<Vec<DataType>> {
    let [sketch, rest @ ..] = arg_types else { return plan_err!("{function}: takes a sketch") };
    if !matches!(sketch, DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::Null) {
        return plan_err!("{function}: the sketch must be binary (what the *_sketch aggregates return), not {sketch}");
    }
    if rest.len() > extra {
        return plan_err!("{function}: takes at most {} arguments, not {}", extra + 1, arg_types.len());
    }
    let mut out = vec![DataType::Binary];
    for t in rest {
        if !(t.is_numeric() || *t == DataType::Null) {
            return plan_err!("{function}: expected a number, not {t}");
        }
        out.push(DataType::Float64);
    }
    Ok(out)
}

/// The accumulator of [`SketchUnion`].
#[derive(Debug)]
struct UnionAccumulator {
    sketch: Option<Stored>,
}

impl Accumulator for UnionAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        const NAME: &str = "sketch_union";
        let Some(column) = values.first() else { return Ok(()) };
        let Some(column) = column.as_binary_opt::<i32>() else {
            return exec_err!("{NAME}: sketches come as Binary, not {}", column.data_type());
        };
        for (row, bytes) in column.iter().enumerate() {
            let Some(bytes) = bytes else { continue };
            let other =
                Stored::from_bytes(bytes).map_err(|e| DataFusionError::Execution(format!("{NAME}: row {row}: {e}")))?;
            match &mut self.sketch {
                Some(sketch) => sketch.merge(&other).map_err(|e| DataFusionError::Execution(format!("{NAME}: {e}")))?,
                None => self.sketch = Some(other),
            }
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Binary(self.sketch.as_ref().map(Stored::to_bytes)))
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.sketch.as_ref().map_or(0, Stored::size)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.evaluate().map(|state| vec![state])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;

    /// The running total of the groups' sizes is the sum of their sizes, through updates,
    /// merges and emissions.
    #[test]
    fn the_groups_size_follows_their_sketches() {
        let proto = Kind::Ull.build("t", &[ScalarValue::Int64(Some(8))]).unwrap();
        let mut acc = GroupSketches {
            name: "t".into(),
            output: Output::Sketch,
            proto,
            sketches: Vec::new(),
            held: 0,
            offsets: Vec::new(),
        };
        let recount = |acc: &GroupSketches| acc.sketches.iter().map(Sketch::size).sum::<usize>();
        for batch in 0..20_i64 {
            let values: ArrayRef = Arc::new(Int64Array::from_iter_values((0..500).map(|i| i * 20 + batch)));
            let groups: Vec<usize> = (0..500).map(|i| (i * 7 + batch as usize) % 13).collect();
            acc.update_batch(&[values], &groups, None, 13).unwrap();
            assert_eq!(acc.held, recount(&acc));
        }
        let state = acc.state(EmitTo::First(5)).unwrap();
        assert_eq!(acc.held, recount(&acc));
        acc.merge_batch(&state, &[0, 1, 2, 3, 4], 13).unwrap();
        assert_eq!(acc.held, recount(&acc));
        acc.evaluate(EmitTo::All).unwrap();
        assert_eq!((acc.held, acc.sketches.len()), (0, 0));
    }
}
