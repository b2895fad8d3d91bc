//! The SQL functions against the Rust API: the same sketches, bit for bit where the answer is
//! deterministic, over memory tables of one and eight partitions, with and without `GROUP BY`,
//! and over a Parquet file of several row groups; rollups; and every kind of bad input.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, Date32Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, UInt64Type};
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use synopses::cardinality::{ExaLogLog, HyperLogLog, UltraLogLog};
use synopses::core::{Mergeable, Operator};
use synopses::frequency::{CountMin, HeavyHitters};
use synopses::membership::Bloom;
use synopses::sampling::Reservoir;

/// Rows of the test table: `g` (a group, 0..7), `i` (an Int64 with NULLs and repeats), `s`
/// (a string), `b` (bytes), `d` (a date), `n` (an Int32).
const ROWS: usize = 20_000;

fn value(row: usize) -> Option<i64> {
    // Repeats (about 6 000 distinct) and a NULL every 97 rows.
    (!row.is_multiple_of(97)).then(|| ((row * 7919) % 6_007) as i64 - 3_000)
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("g", DataType::Int32, false),
        Field::new("i", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("b", DataType::Binary, true),
        Field::new("d", DataType::Date32, true),
        Field::new("n", DataType::Int32, true),
    ]))
}

fn batch(rows: std::ops::Range<usize>) -> RecordBatch {
    let g: Int32Array = rows.clone().map(|r| (r % 7) as i32).collect();
    let i: Int64Array = rows.clone().map(value).collect();
    let s: StringArray = rows.clone().map(|r| value(r).map(|v| format!("user-{v}"))).collect();
    let b: BinaryArray = rows
        .clone()
        .map(|r| value(r).map(|v| v.to_le_bytes().to_vec()))
        .collect::<Vec<_>>()
        .iter()
        .map(|v| v.as_deref())
        .collect();
    let d: Date32Array = rows.clone().map(|r| value(r).map(|v| 19_000 + (v % 400) as i32)).collect();
    let n: Int32Array = rows.map(|r| value(r).map(|v| v as i32)).collect();
    let columns: Vec<ArrayRef> = vec![Arc::new(g), Arc::new(i), Arc::new(s), Arc::new(b), Arc::new(d), Arc::new(n)];
    RecordBatch::try_new(schema(), columns).expect("columns of the schema")
}

/// A context with the functions and a table `t` of `ROWS` rows in `partitions` partitions
/// (of several batches each).
fn context(partitions: usize) -> Result<SessionContext> {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
    synopses_datafusion::register(&ctx);
    let per = ROWS.div_ceil(partitions);
    let parts = (0..partitions)
        .map(|p| {
            let (start, end) = (p * per, ((p + 1) * per).min(ROWS));
            (start..end).step_by(1000).map(|s| batch(s..(s + 1000).min(end))).collect()
        })
        .collect();
    ctx.register_table("t", Arc::new(MemTable::try_new(schema(), parts)?))?;
    Ok(ctx)
}

async fn query(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

/// The single value of a one-row, one-column result.
async fn one(ctx: &SessionContext, sql: &str) -> Result<ArrayRef> {
    let batches = query(ctx, sql).await?;
    let batch = batches.iter().find(|b| b.num_rows() > 0).expect("a row");
    assert_eq!(batch.num_rows(), 1);
    Ok(batch.column(0).slice(0, 1))
}

fn bytes(array: &ArrayRef) -> Vec<u8> {
    array.as_binary::<i32>().value(0).to_vec()
}

/// A sketch without its history (its martingale): what a merge of two non-empty parts holds.
fn merged<S: Mergeable + Clone>(s: &S) -> S {
    let mut out = s.clone();
    out.merge(s).expect("the same configuration");
    out
}

/// The Rust sketch of column `column` of the rows `rows`, as `new` builds it.
fn rust_sketch<S>(mut sketch: S, column: &str, rows: impl Iterator<Item = usize>) -> S
where
    S: for<'a> Operator<&'a str> + Operator<i64> + Operator<i32> + for<'a> Operator<&'a [u8]>,
{
    for r in rows {
        let Some(v) = value(r) else { continue };
        match column {
            "i" => sketch.observe(v),
            "s" => sketch.observe(format!("user-{v}").as_str()),
            "b" => sketch.observe(&v.to_le_bytes()[..]),
            "d" => sketch.observe(19_000 + (v % 400) as i32),
            "n" => sketch.observe(v as i32),
            _ => unreachable!("a column of the table"),
        }
    }
    sketch
}

#[tokio::test]
async fn sketches_equal_the_rust_ones_for_every_type_and_partitioning() -> Result<()> {
    for partitions in [1, 8] {
        let ctx = context(partitions)?;
        for column in ["i", "s", "b", "d", "n"] {
            let sql = format!("SELECT ull_sketch({column}), hll_sketch({column}, 12), ell_sketch({column}, 9) FROM t");
            let batches = query(&ctx, &sql).await?;
            let row = &batches[0];
            let ull = UltraLogLog::from_bytes(&bytes(row.column(0))).expect("an UltraLogLog");
            let hll = HyperLogLog::from_bytes(&bytes(row.column(1))).expect("a HyperLogLog");
            let ell = ExaLogLog::from_bytes(&bytes(row.column(2))).expect("an ExaLogLog");
            let (want_ull, want_hll, want_ell) = (
                rust_sketch(UltraLogLog::new(13).unwrap(), column, 0..ROWS),
                rust_sketch(HyperLogLog::new(12).unwrap(), column, 0..ROWS),
                rust_sketch(ExaLogLog::new(9).unwrap(), column, 0..ROWS),
            );
            if partitions == 1 {
                // One stream, in row order: the very state, martingale included.
                assert_eq!((&ull, &hll, &ell), (&want_ull, &want_hll, &want_ell), "column {column}");
            } else {
                assert_eq!(merged(&ull), merged(&want_ull), "column {column}");
                assert_eq!(merged(&hll), merged(&want_hll), "column {column}");
                assert_eq!(merged(&ell), merged(&want_ell), "column {column}");
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn integers_of_every_width_hash_alike_and_nulls_are_skipped() -> Result<()> {
    let ctx = context(1)?;
    let wide = bytes(&one(&ctx, "SELECT ull_sketch(i) FROM t WHERE i BETWEEN -100 AND 100").await?);
    let narrow = bytes(&one(&ctx, "SELECT ull_sketch(n) FROM t WHERE n BETWEEN -100 AND 100").await?);
    let cast = bytes(&one(&ctx, "SELECT ull_sketch(CAST(i AS SMALLINT)) FROM t WHERE i BETWEEN -100 AND 100").await?);
    assert_eq!((&wide, &narrow), (&cast, &cast));
    // Rows with NULLs add nothing.
    let with_nulls = bytes(&one(&ctx, "SELECT ull_sketch(i) FROM t").await?);
    let without = bytes(&one(&ctx, "SELECT ull_sketch(i) FROM t WHERE i IS NOT NULL").await?);
    assert_eq!(with_nulls, without);
    Ok(())
}

#[tokio::test]
async fn group_by_gives_each_group_its_sketch() -> Result<()> {
    for partitions in [1, 8] {
        let ctx = context(partitions)?;
        let batches = query(&ctx, "SELECT g, ull_sketch(s), distinct_count(s) FROM t GROUP BY g").await?;
        let mut groups = 0;
        for batch in &batches {
            let g = batch.column(0).as_primitive::<datafusion::arrow::datatypes::Int32Type>();
            let sketches = batch.column(1).as_binary::<i32>();
            let counts = batch.column(2).as_primitive::<UInt64Type>();
            for row in 0..batch.num_rows() {
                let group = g.value(row) as usize;
                let want = rust_sketch(UltraLogLog::new(13).unwrap(), "s", (0..ROWS).filter(|r| r % 7 == group));
                let got = UltraLogLog::from_bytes(sketches.value(row)).expect("an UltraLogLog");
                assert_eq!(merged(&got), merged(&want), "group {group}");
                assert_eq!(counts.value(row), got.estimate().round() as u64);
                groups += 1;
            }
        }
        assert_eq!(groups, 7);
    }
    Ok(())
}

#[tokio::test]
async fn many_groups_and_filter_clauses_give_each_group_its_sketch() -> Result<()> {
    for partitions in [1, 8] {
        let ctx = context(partitions)?;
        let sql = "SELECT i % 1000 AS k, hll_sketch(s, 10) FILTER (WHERE n > 0), ell_sketch(d, 8) \
                   FROM t WHERE i IS NOT NULL GROUP BY i % 1000";
        let mut groups = 0;
        for batch in query(&ctx, sql).await? {
            let keys = batch.column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>();
            for row in 0..batch.num_rows() {
                let k = keys.value(row);
                let in_group = |r: &usize| value(*r).is_some_and(|v| v % 1000 == k);
                let want = rust_sketch(
                    HyperLogLog::new(10).unwrap(),
                    "s",
                    (0..ROWS).filter(|r| in_group(r) && value(*r).is_some_and(|v| v as i32 > 0)),
                );
                let got =
                    HyperLogLog::from_bytes(batch.column(1).as_binary::<i32>().value(row)).expect("a HyperLogLog");
                assert_eq!(merged(&got), merged(&want), "group {k}");
                let want = rust_sketch(ExaLogLog::new(8).unwrap(), "d", (0..ROWS).filter(in_group));
                let got = ExaLogLog::from_bytes(batch.column(2).as_binary::<i32>().value(row)).expect("an ExaLogLog");
                assert_eq!(merged(&got), merged(&want), "group {k}");
                groups += 1;
            }
        }
        assert_eq!(groups, 1999, "{partitions} partitions");
    }
    Ok(())
}

#[tokio::test]
async fn distinct_count_is_the_rounded_estimate_within_its_error() -> Result<()> {
    let ctx = context(1)?;
    let exact = one(&ctx, "SELECT COUNT(DISTINCT i) FROM t")
        .await?
        .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
        .value(0);
    for (function, sketch) in
        [("distinct_count", "ull_sketch"), ("distinct_count_hll", "hll_sketch"), ("distinct_count_ell", "ell_sketch")]
    {
        let count = one(&ctx, &format!("SELECT {function}(i) FROM t")).await?.as_primitive::<UInt64Type>().value(0);
        let estimate = one(&ctx, &format!("SELECT sketch_estimate({sketch}(i)) FROM t")).await?;
        let estimate = estimate.as_primitive::<datafusion::arrow::datatypes::Float64Type>().value(0);
        assert_eq!(count, estimate.round() as u64, "{function}");
        // The error the sketch itself states (its relative standard error as it stands): the
        // data are fixed, so this is one draw, and 4σ fails it with probability 6·10^-5.
        let stored = bytes(&one(&ctx, &format!("SELECT {sketch}(i) FROM t")).await?);
        let sigma = match sketch {
            "ull_sketch" => UltraLogLog::from_bytes(&stored).expect("ok").relative_standard_error(),
            "hll_sketch" => HyperLogLog::from_bytes(&stored).expect("ok").relative_standard_error(),
            _ => ExaLogLog::from_bytes(&stored).expect("ok").relative_standard_error(),
        };
        assert!(sigma > 0.0 && sigma < 0.02, "{function}: σ = {sigma}");
        let error = (count as f64 / exact as f64 - 1.0).abs();
        assert!(error <= 4.0 * sigma, "{function}: {count} against {exact}, {error} > 4σ = {}", 4.0 * sigma);
    }
    Ok(())
}

#[tokio::test]
async fn bounds_bracket_the_estimate_and_the_confidence_widens_them() -> Result<()> {
    let ctx = context(1)?;
    let batches = query(
        &ctx,
        "SELECT sketch_lower_bound(s, 3), sketch_lower_bound(s), sketch_lower_bound(s, 1), sketch_estimate(s), \
         sketch_upper_bound(s, 1), sketch_upper_bound(s), sketch_upper_bound(s, 3) FROM (SELECT hll_sketch(i, 8) AS s FROM t)",
    )
    .await?;
    let v: Vec<f64> = (0..7)
        .map(|c| batches[0].column(c).as_primitive::<datafusion::arrow::datatypes::Float64Type>().value(0))
        .collect();
    assert!(v.windows(2).all(|w| w[0] < w[1]), "{v:?}");
    Ok(())
}

#[tokio::test]
async fn daily_sketches_roll_up_to_the_sketch_of_the_whole() -> Result<()> {
    let ctx = context(8)?;
    ctx.sql(
        "CREATE TABLE daily AS SELECT g AS day, ull_sketch(s) AS users, ell_sketch(s) AS users_ell FROM t GROUP BY g",
    )
    .await?
    .collect()
    .await?;
    let rolled = UltraLogLog::from_bytes(&bytes(&one(&ctx, "SELECT sketch_union(users) FROM daily").await?))
        .expect("an UltraLogLog");
    let whole = rust_sketch(UltraLogLog::new(13).unwrap(), "s", 0..ROWS);
    assert_eq!(merged(&rolled), merged(&whole));
    let rolled = ExaLogLog::from_bytes(&bytes(&one(&ctx, "SELECT sketch_union(users_ell) FROM daily").await?))
        .expect("an ExaLogLog");
    assert_eq!(merged(&rolled), merged(&rust_sketch(ExaLogLog::new(11).unwrap(), "s", 0..ROWS)));
    // A sketch built in Rust merges with the stored ones.
    let mut extra = UltraLogLog::new(13).unwrap();
    extra.observe("someone new");
    let sql = format!(
        "SELECT sketch_estimate(sketch_union(u)) FROM (SELECT users AS u FROM daily UNION ALL SELECT X'{}' AS u)",
        hex(&extra.to_bytes())
    );
    let with_extra = one(&ctx, &sql).await?.as_primitive::<datafusion::arrow::datatypes::Float64Type>().value(0);
    let mut want = merged(&whole);
    want.merge(&extra).unwrap();
    assert_eq!(with_extra, want.estimate());
    // No sketches: NULL.
    assert!(one(&ctx, "SELECT sketch_union(users) FROM daily WHERE day > 100").await?.is_null(0));
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[tokio::test]
async fn parquet_with_several_row_groups_gives_the_memory_table_answers() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("synopses-datafusion-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("t.parquet");
    {
        let file = std::fs::File::create(&path)?;
        let props = WriterProperties::builder().set_max_row_group_row_count(Some(3_000)).build();
        let mut writer = ArrowWriter::try_new(file, schema(), Some(props))?;
        for start in (0..ROWS).step_by(1000) {
            writer.write(&batch(start..(start + 1000).min(ROWS)))?;
        }
        let metadata = writer.close()?;
        assert!(metadata.num_row_groups() > 5);
    }
    for partitions in [1, 8] {
        let ctx = context(partitions)?;
        ctx.register_parquet("p", path.to_str().expect("a UTF-8 path"), ParquetReadOptions::default()).await?;
        for column in ["i", "s", "d"] {
            let from_file =
                UltraLogLog::from_bytes(&bytes(&one(&ctx, &format!("SELECT ull_sketch({column}) FROM p")).await?))
                    .expect("ok");
            let from_memory =
                UltraLogLog::from_bytes(&bytes(&one(&ctx, &format!("SELECT ull_sketch({column}) FROM t")).await?))
                    .expect("ok");
            assert_eq!(merged(&from_file), merged(&from_memory), "column {column}, {partitions} partitions");
        }
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[tokio::test]
async fn count_min_and_bloom_sketches_equal_the_rust_ones_and_answer_per_value() -> Result<()> {
    for partitions in [1, 8] {
        let ctx = context(partitions)?;
        let batches =
            query(&ctx, "SELECT cms_sketch(s), cms_sketch(s, 512, 3), bloom_sketch(i, 20000, 0.01) FROM t").await?;
        let row = &batches[0];
        let cms = CountMin::from_bytes(&bytes(row.column(0))).expect("a Count-Min sketch");
        let small = CountMin::from_bytes(&bytes(row.column(1))).expect("a Count-Min sketch");
        let bloom = Bloom::from_bytes(&bytes(row.column(2))).expect("a Bloom filter");
        // Merges of counts and bits are exact: the very state of one pass, whatever the partitions.
        assert_eq!(cms, rust_sketch(CountMin::new(2048, 5).unwrap(), "s", 0..ROWS));
        assert_eq!(small, rust_sketch(CountMin::new(512, 3).unwrap(), "s", 0..ROWS));
        assert_eq!(bloom, rust_sketch(Bloom::with_false_positive_rate(20_000, 0.01).unwrap(), "i", 0..ROWS));

        // Per value, from a stored sketch: the Rust answers, for a constant and for a column.
        ctx.sql("CREATE TABLE sketches AS SELECT cms_sketch(s, 512, 3) AS f, bloom_sketch(i, 20000, 0.01) AS m FROM t")
            .await?
            .collect()
            .await?;
        let answers = query(
            &ctx,
            "SELECT t.s, t.i, sketch_frequency(f, t.s), sketch_contains(m, t.i), sketch_contains(m, t.i + 1000000) \
             FROM t, sketches WHERE t.g = 3",
        )
        .await?;
        let mut rows = 0;
        for batch in &answers {
            let (s, i) = (
                batch.column(0).as_string::<i32>(),
                batch.column(1).as_primitive::<datafusion::arrow::datatypes::Int64Type>(),
            );
            let frequency = batch.column(2).as_primitive::<UInt64Type>();
            let (member, stranger) = (batch.column(3).as_boolean(), batch.column(4).as_boolean());
            for r in 0..batch.num_rows() {
                if s.is_null(r) {
                    assert!(frequency.is_null(r) && member.is_null(r));
                    continue;
                }
                assert_eq!(frequency.value(r), small.estimate(s.value(r)));
                assert!(member.value(r), "no false negatives");
                assert_eq!(stranger.value(r), bloom.contains(i.value(r) + 1_000_000));
                rows += 1;
            }
        }
        assert!(rows > 2_000);
    }
    Ok(())
}

#[tokio::test]
async fn a_bloom_sketch_built_by_one_query_prefilters_another() -> Result<()> {
    let ctx = context(8)?;
    // The users of group 0, as a filter; then the rows of the other groups whose user may be one.
    ctx.sql("CREATE TABLE group0 AS SELECT bloom_sketch(i, 10000, 0.001) AS users FROM t WHERE g = 0")
        .await?
        .collect()
        .await?;
    let candidates = one(&ctx, "SELECT COUNT(*) FROM t, group0 WHERE g <> 0 AND sketch_contains(users, i)").await?;
    let exact = one(&ctx, "SELECT COUNT(*) FROM t WHERE g <> 0 AND i IN (SELECT i FROM t WHERE g = 0)").await?;
    let (candidates, exact) = (
        candidates.as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0),
        exact.as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0),
    );
    // Every true member passes; a stranger passes with probability at most 0.001 (the filter
    // holds at most the 10 000 values it was sized for), so the strangers that pass stay
    // below their mean plus 4 standard deviations.
    let rows = one(&ctx, "SELECT COUNT(*) FROM t WHERE g <> 0 AND i IS NOT NULL").await?;
    let strangers = (rows.as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0) - exact) as f64;
    let mean = strangers * 0.001;
    let bound = exact + (mean + 4.0 * (mean * (1.0 - 0.001)).sqrt()).ceil() as i64;
    assert!(candidates >= exact && candidates <= bound, "{candidates} candidates for {exact} (at most {bound})");
    // The same with the filter as a scalar subquery.
    let subquery =
        one(&ctx, "SELECT COUNT(*) FROM t WHERE g <> 0 AND sketch_contains((SELECT users FROM group0), i)").await?;
    assert_eq!(subquery.as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0), candidates);
    Ok(())
}

/// The `{value, count, lower, upper}` items of a `heavy_hitters` answer (the first row), with
/// the values as `i64`.
fn heavy_items(answer: &ArrayRef) -> Vec<(i64, u64, u64, u64)> {
    let list = answer.as_list::<i32>().value(0);
    let items = list.as_struct();
    let values = items.column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>();
    let [count, lower, upper] = [1, 2, 3].map(|c| items.column(c).as_primitive::<UInt64Type>().clone());
    (0..items.len()).map(|r| (values.value(r), count.value(r), lower.value(r), upper.value(r))).collect()
}

#[tokio::test]
async fn heavy_hitters_bracket_every_count_and_miss_no_frequent_value() -> Result<()> {
    // 7 in three rows of seven (the groups 0, 1, 2), otherwise the column's ~6 000 values.
    let skewed = "CASE WHEN g < 3 THEN 7 ELSE i END";
    for partitions in [1, 8] {
        let ctx = context(partitions)?;
        let answer = one(&ctx, &format!("SELECT heavy_hitters({skewed}, 20) FROM t")).await?;
        let items = heavy_items(&answer);
        let exact =
            query(&ctx, &format!("SELECT {skewed} AS v, COUNT(*) FROM t WHERE {skewed} IS NOT NULL GROUP BY v"))
                .await?;
        let mut truth = std::collections::HashMap::new();
        for batch in &exact {
            let (v, c) = (
                batch.column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>(),
                batch.column(1).as_primitive::<datafusion::arrow::datatypes::Int64Type>(),
            );
            for r in 0..batch.num_rows() {
                truth.insert(v.value(r), c.value(r) as u64);
            }
        }
        let n: u64 = truth.values().sum();
        for &(value, count, lower, upper) in &items {
            let t = truth[&value];
            assert!(lower <= t && t <= upper && count == lower, "{value}: {lower} <= {t} <= {upper}");
            assert!(upper - lower <= n / 21, "the error is at most N/(k+1)");
        }
        assert!(items.windows(2).all(|w| w[0].1 >= w[1].1), "most frequent first");
        for (&value, &t) in &truth {
            if t > n / 21 {
                assert!(items.iter().any(|i| i.0 == value), "{value} ({t} of {n}) is frequent");
            }
        }
        assert_eq!(items.first().map(|i| i.0), Some(7));
        if partitions == 1 {
            // One stream, in row order: the Rust summary's own answer.
            let mut want = HeavyHitters::<i64>::new(20).unwrap();
            for r in 0..ROWS {
                let v = if r % 7 < 3 { Some(7) } else { value(r) };
                if let Some(v) = v {
                    want.observe(v);
                }
            }
            let want: Vec<(i64, u64)> = want.top(20);
            assert_eq!(items.iter().map(|i| (i.0, i.1)).collect::<Vec<_>>(), want);
        }
    }
    // Per group, with a FILTER clause: each group's summary is the Rust one over its rows.
    let ctx = context(1)?;
    for batch in query(&ctx, "SELECT g, heavy_hitters(i % 50, 10) FILTER (WHERE n > 0) FROM t GROUP BY g").await? {
        let groups = batch.column(0).as_primitive::<datafusion::arrow::datatypes::Int32Type>();
        for row in 0..batch.num_rows() {
            let group = groups.value(row) as usize;
            let mut want = HeavyHitters::<i64>::new(10).unwrap();
            for r in (0..ROWS).filter(|r| r % 7 == group) {
                if let Some(v) = value(r).filter(|&v| v as i32 > 0) {
                    want.observe(v % 50);
                }
            }
            let items = heavy_items(&batch.column(1).slice(row, 1));
            assert_eq!(items.iter().map(|i| (i.0, i.1)).collect::<Vec<_>>(), want.top(10), "group {group}");
        }
    }
    // Strings and NULLs: the most frequent string is the constant.
    let ctx = context(2)?;
    let answer = one(&ctx, "SELECT heavy_hitters(CASE WHEN g = 0 THEN 'x' ELSE s END, 5) FROM t").await?;
    let list = answer.as_list::<i32>().value(0);
    assert_eq!(list.as_struct().column(0).as_string::<i32>().value(0), "x");
    Ok(())
}

/// The message of a query's error while it is planned (logically, or physically with the
/// optimizer); a query that plans is a failure of the test.
async fn planning_error(ctx: &SessionContext, sql: &str) -> String {
    match ctx.sql(sql).await {
        Err(e) => e.to_string(),
        Ok(df) => match df.create_physical_plan().await {
            Err(e) => e.to_string(),
            Ok(_) => panic!("`{sql}` was planned"),
        },
    }
}

/// The message of a query's error when it runs; a query that fails to plan, or succeeds, is
/// a failure of the test.
async fn execution_error(ctx: &SessionContext, sql: &str) -> String {
    let df = ctx.sql(sql).await.unwrap_or_else(|e| panic!("`{sql}` plans: {e}"));
    let plan = df.clone().create_physical_plan().await.unwrap_or_else(|e| panic!("`{sql}` plans: {e}"));
    drop(plan);
    match df.collect().await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("`{sql}` succeeded"),
    }
}

#[tokio::test]
async fn bad_arguments_fail_while_planning_with_the_function_named() -> Result<()> {
    let ctx = context(2)?;
    for (sql, function) in [
        ("SELECT ull_sketch(INTERVAL '1' DAY) FROM t", "ull_sketch"),
        ("SELECT hll_sketch(i, 'x') FROM t", "hll_sketch"),
        ("SELECT hll_sketch(i, 99) FROM t", "hll_sketch"),
        ("SELECT hll_sketch(i, 2) FROM t", "hll_sketch"),
        ("SELECT ell_sketch(i, -1) FROM t", "ell_sketch"),
        ("SELECT ull_sketch(i, n) FROM t", "ull_sketch"),
        ("SELECT distinct_count(i, 12, 3) FROM t", "distinct_count"),
        ("SELECT distinct_count() FROM t", "distinct_count"),
        ("SELECT sketch_union(i) FROM t", "sketch_union"),
        ("SELECT sketch_estimate(s) FROM t", "sketch_estimate"),
        ("SELECT sketch_upper_bound(ull_sketch(i), 0.5) FROM t", "sketch_upper_bound"),
        ("SELECT sketch_lower_bound(ull_sketch(i), 'high') FROM t", "sketch_lower_bound"),
        ("SELECT heavy_hitters(i, 0) FROM t", "heavy_hitters"),
        ("SELECT heavy_hitters(d) FROM t", "heavy_hitters"),
        ("SELECT heavy_hitters(i, n) FROM t", "heavy_hitters"),
        ("SELECT cms_sketch(s, 0, 5) FROM t", "cms_sketch"),
        ("SELECT cms_sketch(s, 1024) FROM t", "cms_sketch"),
        ("SELECT bloom_sketch(i, 100, 2.0) FROM t", "bloom_sketch"),
        ("SELECT bloom_sketch(i, -5, 0.01) FROM t", "bloom_sketch"),
        ("SELECT sketch_frequency(cms_sketch(s)) FROM t", "sketch_frequency"),
        ("SELECT sketch_contains(bloom_sketch(i), INTERVAL '1' DAY) FROM t", "sketch_contains"),
        ("SELECT sample(i, 0) FROM t", "sample"),
        ("SELECT sample(i, 16777217) FROM t", "sample"),
        ("SELECT sample(i, n) FROM t", "sample"),
        ("SELECT sample(i, 'x') FROM t", "sample"),
        ("SELECT sample() FROM t", "sample"),
        ("SELECT weighted_sample(i) FROM t", "weighted_sample"),
        ("SELECT weighted_sample(i, s, 3) FROM t", "weighted_sample"),
        ("SELECT weighted_sample(i, n, -3) FROM t", "weighted_sample"),
        ("SELECT sample_union(i) FROM t", "sample_union"),
        ("SELECT sketch_sample(ull_sketch(i)) FROM t", "sketch_sample"),
        ("SELECT sample_sketch(i, 0) FROM t", "sample_sketch"),
    ] {
        let message = planning_error(&ctx, sql).await;
        assert!(message.contains(function), "`{sql}`: {message}");
    }
    Ok(())
}

#[tokio::test]
async fn foreign_or_damaged_sketches_fail_when_the_query_runs() -> Result<()> {
    let ctx = context(1)?;
    let good = UltraLogLog::new(13).unwrap().to_bytes();
    let mut damaged = good.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    let other_precision = UltraLogLog::new(12).unwrap().to_bytes();
    let hll = HyperLogLog::new(13).unwrap().to_bytes();
    for (sql, needle) in [
        (format!("SELECT sketch_estimate(X'{}')", hex(&damaged)), "checksum"),
        ("SELECT sketch_estimate(X'000102FF')".to_string(), "not the bytes"),
        (
            format!("SELECT sketch_union(s) FROM (SELECT X'{}' AS s UNION ALL SELECT X'{}')", hex(&good), hex(&hll)),
            "cannot merge",
        ),
        (
            format!(
                "SELECT sketch_union(s) FROM (SELECT X'{}' AS s UNION ALL SELECT X'{}')",
                hex(&good),
                hex(&damaged)
            ),
            "sketch_union",
        ),
        (
            format!(
                "SELECT sketch_union(s) FROM (SELECT X'{}' AS s UNION ALL SELECT X'{}')",
                hex(&other_precision),
                hex(&hll)
            ),
            "sketch_union",
        ),
        (format!("SELECT sketch_frequency(X'{}', 'x')", hex(&good)), "expected a count-min sketch"),
        (format!("SELECT sketch_contains(X'{}', 'x')", hex(&good)), "expected a bloom filter"),
        (
            format!("SELECT sketch_estimate(X'{}')", hex(&CountMin::new(64, 2).unwrap().to_bytes())),
            "expected a distinct count",
        ),
    ] {
        let message = execution_error(&ctx, &sql).await;
        assert!(message.to_lowercase().contains(needle), "`{sql}`: {message}");
    }
    Ok(())
}

#[tokio::test]
async fn a_precision_mismatch_in_a_union_reduces_or_fails_cleanly() -> Result<()> {
    // UltraLogLog merges down to the smaller precision; the result is that of the coarser.
    let ctx = context(1)?;
    let (mut a, mut b) = (UltraLogLog::new(13).unwrap(), UltraLogLog::new(12).unwrap());
    a.observe(1_u64);
    b.observe(2_u64);
    let sql = format!(
        "SELECT sketch_union(s) FROM (SELECT X'{}' AS s UNION ALL SELECT X'{}')",
        hex(&a.to_bytes()),
        hex(&b.to_bytes())
    );
    let got = match ctx.sql(&sql).await?.collect().await {
        Ok(batches) => Some(batches),
        Err(e) => {
            assert!(e.to_string().contains("sketch_union"), "{e}");
            None
        }
    };
    let mut want = a.clone();
    if want.merge(&b).is_ok() {
        let batches = got.expect("the merge the Rust API allows");
        let array = batches.iter().find(|b| b.num_rows() > 0).expect("a row").column(0).clone();
        assert_eq!(UltraLogLog::from_bytes(&bytes(&array)).expect("ok"), want);
    }
    Ok(())
}

#[tokio::test]
async fn empty_input_gives_the_empty_sketch_and_a_zero_count() -> Result<()> {
    let ctx = context(8)?;
    let sketch = bytes(&one(&ctx, "SELECT ull_sketch(i) FROM t WHERE i > 1000000").await?);
    assert_eq!(UltraLogLog::from_bytes(&sketch).expect("ok"), UltraLogLog::new(13).unwrap());
    let count = one(&ctx, "SELECT distinct_count(i) FROM t WHERE i > 1000000").await?;
    assert_eq!(count.as_primitive::<UInt64Type>().value(0), 0);
    Ok(())
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Arbitrary bytes, and a valid sketch with one byte changed, never panic a function:
        /// an answer or an error.
        #[test]
        fn arbitrary_bytes_give_an_answer_or_an_error(noise in prop::collection::vec(any::<u8>(), 0..64), at in any::<usize>(), xor in 1..=255_u8) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
            let mut sketch = UltraLogLog::new(8).unwrap();
            (0..50_u64).for_each(|i| sketch.observe(i));
            let mut flipped = sketch.to_bytes();
            let i = at % flipped.len();
            flipped[i] ^= xor;
            runtime.block_on(async {
                let ctx = SessionContext::new();
                synopses_datafusion::register(&ctx);
                for bytes in [&noise, &flipped] {
                    for function in ["sketch_estimate", "sketch_lower_bound", "sketch_upper_bound", "sketch_union"] {
                        let sql = format!("SELECT {function}(X'{}')", hex(bytes));
                        if let Ok(df) = ctx.sql(&sql).await {
                            let _ = df.collect().await;
                        }
                    }
                }
            });
        }

        /// Damaged quantile sketches (and arbitrary bytes) never panic the functions that read
        /// them: an answer or an error.
        #[test]
        fn damaged_quantile_sketches_give_an_answer_or_an_error(noise in prop::collection::vec(any::<u8>(), 0..64), at in any::<usize>(), xor in 1..=255_u8) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
            let mut kll = synopses::quantiles::Kll::new(8, 1).unwrap();
            (0..40).for_each(|i| kll.add(f64::from(i)).unwrap());
            let mut dd = synopses::quantiles::DDSketch::new(0.05).unwrap();
            (1..40).for_each(|i| dd.add(f64::from(i)).unwrap());
            let flip = |mut bytes: Vec<u8>| {
                let i = at % bytes.len();
                bytes[i] ^= xor;
                bytes
            };
            let (kll, dd) = (flip(kll.to_bytes()), flip(dd.to_bytes()));
            runtime.block_on(async {
                let ctx = SessionContext::new();
                synopses_datafusion::register(&ctx);
                for bytes in [&noise, &kll, &dd] {
                    for sql in [
                        format!("SELECT sketch_quantile(X'{}', 0.5)", hex(bytes)),
                        format!("SELECT sketch_rank(X'{}', 3)", hex(bytes)),
                        format!("SELECT sketch_union(s) FROM (SELECT X'{}' AS s)", hex(bytes)),
                    ] {
                        if let Ok(df) = ctx.sql(&sql).await {
                            let _ = df.collect().await;
                        }
                    }
                }
            });
        }

        /// Stored samples with arbitrary or damaged sampler bytes, and values lists of any
        /// length, never panic `sketch_sample` or `sample_union`: an answer or an error.
        #[test]
        fn damaged_stored_samples_give_an_answer_or_an_error(noise in prop::collection::vec(any::<u8>(), 0..64),
                                                             at in any::<usize>(), xor in 1..=255_u8, values in 0_usize..6) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
            let mut sampler = Reservoir::<u32>::new(4, 3).unwrap();
            sampler.observe_all(0..4_u32);
            let mut flipped = sampler.to_bytes();
            let i = at % flipped.len();
            flipped[i] ^= xor;
            let list = format!("[{}]", (0..values).map(|v| v.to_string()).collect::<Vec<_>>().join(", "));
            runtime.block_on(async {
                let ctx = SessionContext::new();
                synopses_datafusion::register(&ctx);
                for bytes in [&noise, &flipped, &sampler.to_bytes()] {
                    let stored = format!("named_struct('sampler', X'{}', 'values', {list})", hex(bytes));
                    for sql in [format!("SELECT sketch_sample({stored})"), format!("SELECT sample_union(s) FROM (SELECT {stored} AS s)")] {
                        if let Ok(df) = ctx.sql(&sql).await {
                            let _ = df.collect().await;
                        }
                    }
                }
            });
        }
    }
}

#[test]
fn the_table_has_what_the_tests_need() {
    let b = batch(0..ROWS);
    assert!(b.column(1).null_count() > 100);
    let distinct: std::collections::HashSet<_> = (0..ROWS).filter_map(value).collect();
    assert!(distinct.len() > 5_000);
}

mod every_type {
    use super::*;
    use datafusion::arrow::array::{
        BooleanArray, Decimal128Array, DictionaryArray, Float32Array, Float64Array, Int8Array, LargeStringArray,
        StringViewArray, TimestampMicrosecondArray, UInt16Array,
    };
    use datafusion::arrow::datatypes::Int16Type;
    use proptest::prelude::*;

    /// The Rust sketch a column of `values` should give, each value observed as `as_rust`
    /// makes it.
    fn want<V: Clone>(values: &[Option<V>], observe: impl Fn(&mut UltraLogLog, V)) -> UltraLogLog {
        let mut sketch = UltraLogLog::new(13).unwrap();
        values.iter().flatten().for_each(|v| observe(&mut sketch, v.clone()));
        sketch
    }

    /// The float a SQL sketch hashes: one zero, one NaN.
    fn canonical(x: f64) -> f64 {
        if x == 0.0 {
            0.0
        } else if x.is_nan() {
            f64::NAN
        } else {
            x
        }
    }

    fn run(columns: Vec<(&str, ArrayRef)>, want: Vec<UltraLogLog>) -> std::result::Result<(), TestCaseError> {
        let fields: Vec<Field> =
            columns.iter().map(|(name, a)| Field::new(*name, a.data_type().clone(), true)).collect();
        let schema = Arc::new(Schema::new(fields));
        let batch =
            RecordBatch::try_new(Arc::clone(&schema), columns.iter().map(|(_, a)| Arc::clone(a)).collect()).unwrap();
        // Two partitions: the first row alone, then the rest.
        let (head, tail) = (
            batch.slice(0, batch.num_rows().min(1)),
            batch.slice(batch.num_rows().min(1), batch.num_rows() - batch.num_rows().min(1)),
        );
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let got: Vec<UltraLogLog> = runtime.block_on(async {
            let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
            synopses_datafusion::register(&ctx);
            ctx.register_table("v", Arc::new(MemTable::try_new(schema, vec![vec![head], vec![tail]]).unwrap()))
                .unwrap();
            let select = columns.iter().map(|(name, _)| format!("ull_sketch({name})")).collect::<Vec<_>>().join(", ");
            let batches = query(&ctx, &format!("SELECT {select} FROM v")).await.unwrap();
            let row = batches.iter().find(|b| b.num_rows() > 0).unwrap();
            row.columns().iter().map(|c| UltraLogLog::from_bytes(c.as_binary::<i32>().value(0)).unwrap()).collect()
        });
        for (((name, _), got), want) in columns.iter().zip(&got).zip(&want) {
            prop_assert_eq!(merged(got), merged(want), "column {}", name);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        /// Every Arrow type of the crate docs' table, NULLs included, gives the sketch of the
        /// Rust values it holds (up to 600 rows: numbers are hashed in chunks of 256).
        #[test]
        fn every_type_hashes_as_its_rust_value(
            rows in prop::collection::vec((
                prop::option::of(any::<i64>()),
                prop::option::of(".{0,12}"),
                prop::option::of(prop_oneof![any::<f64>(), Just(0.0), Just(-0.0), Just(f64::NAN), Just(-f64::NAN)]),
                prop::option::of(0_i16..4),
            ), 1..600),
        ) {
            let ints: Vec<Option<i64>> = rows.iter().map(|r| r.0).collect();
            let texts: Vec<Option<String>> = rows.iter().map(|r| r.1.clone()).collect();
            let floats: Vec<Option<f64>> = rows.iter().map(|r| r.2).collect();
            let keys: Vec<Option<i16>> = rows.iter().map(|r| r.3).collect();
            let small: Vec<Option<i8>> = ints.iter().map(|v| v.map(|v| v as i8)).collect();
            let unsigned: Vec<Option<u16>> = ints.iter().map(|v| v.map(|v| v as u16)).collect();
            let flags: Vec<Option<bool>> = ints.iter().map(|v| v.map(|v| v % 2 == 0)).collect();
            let dictionary_values = ["red", "green", "", "blue"];
            let dictionary: DictionaryArray<Int16Type> = keys.iter().map(|k| k.map(|k| dictionary_values[k as usize])).collect();
            let dictionary_as_text: Vec<Option<String>> = keys.iter().map(|k| k.map(|k| dictionary_values[k as usize].to_string())).collect();
            let f32s: Vec<Option<f32>> = floats.iter().map(|v| v.map(|v| v as f32)).collect();
            let columns: Vec<(&str, ArrayRef)> = vec![
                ("i64", Arc::new(Int64Array::from(ints.clone()))),
                ("i8", Arc::new(Int8Array::from(small.clone()))),
                ("u16", Arc::new(UInt16Array::from(unsigned.clone()))),
                ("flag", Arc::new(BooleanArray::from(flags.clone()))),
                ("text", Arc::new(StringArray::from(texts.clone()))),
                ("large_text", Arc::new(LargeStringArray::from(texts.clone()))),
                ("text_view", Arc::new(StringViewArray::from(texts.clone()))),
                ("bytes", Arc::new(BinaryArray::from(texts.iter().map(|t| t.as_deref().map(str::as_bytes)).collect::<Vec<_>>()))),
                ("f64", Arc::new(Float64Array::from(floats.clone()))),
                ("f32", Arc::new(Float32Array::from(f32s.clone()))),
                ("day", Arc::new(Date32Array::from(small.iter().map(|v| v.map(i32::from)).collect::<Vec<_>>()))),
                ("at", Arc::new(TimestampMicrosecondArray::from(ints.clone()))),
                ("amount", Arc::new(Decimal128Array::from(ints.iter().map(|v| v.map(i128::from)).collect::<Vec<_>>()).with_precision_and_scale(38, 2).unwrap())),
                ("color", Arc::new(dictionary)),
            ];
            let want = vec![
                want(&ints, |s, v| s.observe(v)),
                want(&small, |s, v| s.observe(v)),
                want(&unsigned, |s, v| s.observe(v)),
                want(&flags, |s, v| s.observe(v)),
                want(&texts, |s, v| s.observe(v.as_str())),
                want(&texts, |s, v| s.observe(v.as_str())),
                want(&texts, |s, v| s.observe(v.as_str())),
                want(&texts, |s, v| s.observe(v.as_bytes())),
                want(&floats, |s, v| s.observe(canonical(v).to_bits())),
                want(&f32s, |s, v| s.observe((canonical(f64::from(v)) as f32).to_bits())),
                want(&small, |s, v| s.observe(i32::from(v))),
                want(&ints, |s, v| s.observe(v)),
                want(&ints, |s, v| s.observe(i128::from(v))),
                want(&dictionary_as_text, |s, v| s.observe(v.as_str())),
            ];
            run(columns, want)?;
        }
    }
}

/// A table `u` of the values `0..n` (Int64, column `v`) in `partitions` partitions.
fn numbers(n: i64, partitions: usize) -> Result<SessionContext> {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
    synopses_datafusion::register(&ctx);
    let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
    let per = (n as usize).div_ceil(partitions) as i64;
    let parts = (0..partitions as i64)
        .map(|p| {
            let values: Int64Array = (p * per..((p + 1) * per).min(n)).collect();
            RecordBatch::try_new(schema.clone(), vec![Arc::new(values) as ArrayRef]).map(|b| vec![b])
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    ctx.register_table("u", Arc::new(MemTable::try_new(schema, parts)?))?;
    Ok(ctx)
}

/// The Int64 items of the first row's list.
fn sampled(answer: &ArrayRef) -> Vec<i64> {
    answer.as_list::<i32>().value(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>().values().to_vec()
}

/// Pearson's statistic of `counts` against `expected`, and its tolerance when the statistic
/// is distributed as `scale · χ²(df)`: `scale` times the quantile of χ²(df) that a correct
/// sampler exceeds with probability 10^-6, by Wilson and Hilferty's approximation
/// `df · (1 − 2/(9·df) + z·√(2/(9·df)))³` with `z = 4.753` (181 for df = 99, 64 for 19).
///
/// These tests cannot fix a seed: the SQL samplers seed every partial aggregate from the
/// operating system (DataFusion does not say which partition an aggregate runs in). So the
/// tail is set far out, 10^-6 per check and about 5·10^-6 per run of the five checks, where a
/// broken merge (one part's sample only) or a union that takes as many rows from each part
/// exceeds it by an order of magnitude (measured: every sample test fails when parts are not
/// merged).
fn pearson(counts: &[u64], expected: &[f64], df: f64, scale: f64) -> (f64, f64) {
    let statistic = counts.iter().zip(expected).map(|(&c, &e)| (c as f64 - e).powi(2) / e).sum();
    let v = 2.0 / (9.0 * df);
    (statistic, scale * df * (1.0 - v + 4.753 * v.sqrt()).powi(3))
}

#[tokio::test]
async fn samples_are_uniform_over_every_partition() -> Result<()> {
    // 100 values, 10 sampled, 400 queries: each value is expected 40 times. A query's k
    // values are distinct, so its counts are negatively correlated (covariance −p(1 − p)/(n − 1)
    // for p = k/n) and Pearson's statistic is distributed as (1 − p)·n/(n − 1) · χ²(n − 1).
    let (n, k, runs) = (100_usize, 10_usize, 400_u64);
    for partitions in [1, 8] {
        let ctx = numbers(n as i64, partitions)?;
        let mut counts = vec![0_u64; n];
        for _ in 0..runs {
            let items = sampled(&one(&ctx, &format!("SELECT sample(v, {k}) FROM u")).await?);
            let mut distinct = items.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), k, "{items:?}");
            items.iter().for_each(|&v| counts[v as usize] += 1);
        }
        let expected = vec![(runs * k as u64) as f64 / n as f64; n];
        let p = k as f64 / n as f64;
        let (statistic, tolerance) = pearson(&counts, &expected, (n - 1) as f64, (1.0 - p) * n as f64 / (n - 1) as f64);
        assert!(statistic < tolerance, "{partitions} partitions: χ² = {statistic} ≥ {tolerance}: {counts:?}");
    }
    Ok(())
}

#[tokio::test]
async fn a_weighted_sample_draws_in_proportion_to_the_weights() -> Result<()> {
    // One draw: value v (weight v + 5) comes first with probability (v + 5)/Σ, and the
    // counts are multinomial: Pearson's statistic is χ²(n − 1).
    let (n, runs) = (20_usize, 600_u64);
    for partitions in [1, 8] {
        let ctx = numbers(n as i64, partitions)?;
        let mut counts = vec![0_u64; n];
        for _ in 0..runs {
            let items = sampled(&one(&ctx, "SELECT weighted_sample(v, v + 5, 1) FROM u").await?);
            assert_eq!(items.len(), 1);
            counts[items[0] as usize] += 1;
        }
        let total: f64 = (0..n).map(|v| (v + 5) as f64).sum();
        let expected: Vec<f64> = (0..n).map(|v| runs as f64 * (v + 5) as f64 / total).collect();
        let (statistic, tolerance) = pearson(&counts, &expected, (n - 1) as f64, 1.0);
        assert!(statistic < tolerance, "{partitions} partitions: χ² = {statistic} ≥ {tolerance}: {counts:?}");
    }
    // Zero and NULL weights are never drawn; a negative one is an error naming the function.
    let ctx = numbers(n as i64, 4)?;
    for _ in 0..20 {
        let sql = "SELECT weighted_sample(v, CASE WHEN v < 3 THEN v + 1 WHEN v < 10 THEN 0 END, 5) FROM u";
        let mut items = sampled(&one(&ctx, sql).await?);
        items.sort_unstable();
        assert_eq!(items, vec![0, 1, 2]);
    }
    let message = execution_error(&ctx, "SELECT weighted_sample(v, v - 3) FROM u").await;
    assert!(message.contains("weighted_sample") && message.contains("-3"), "{message}");
    Ok(())
}

#[tokio::test]
async fn samples_of_rows_keep_their_columns_together_per_group() -> Result<()> {
    for partitions in [1, 8] {
        let ctx = context(partitions)?;
        let sql = "SELECT g, sample(named_struct('i', i, 's', s), 4), sample(i), weighted_sample(s, n, 3) \
                   FROM t WHERE n > 0 GROUP BY g ORDER BY g";
        let batches = query(&ctx, sql).await?;
        let mut groups = 0;
        for batch in &batches {
            let g = batch.column(0).as_primitive::<datafusion::arrow::datatypes::Int32Type>();
            let rows = batch.column(1).as_list::<i32>();
            for row in 0..batch.num_rows() {
                let sample = rows.value(row);
                let sample = sample.as_struct();
                assert_eq!(sample.len(), 4);
                let i = sample.column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>();
                let s = sample.column(1).as_string::<i32>();
                for r in 0..sample.len() {
                    // A row of the group, whole.
                    assert_eq!(s.value(r), format!("user-{}", i.value(r)));
                    let group = g.value(row) as usize;
                    assert!((0..ROWS).any(|x| x % 7 == group && value(x) == Some(i.value(r))));
                }
                assert_eq!(batch.column(2).as_list::<i32>().value(row).len(), 100);
                assert_eq!(batch.column(3).as_list::<i32>().value(row).len(), 3);
                groups += 1;
            }
        }
        assert_eq!(groups, 7);
    }
    // No rows: the empty sample.
    let ctx = context(4)?;
    assert!(sampled(&one(&ctx, "SELECT sample(i, 3) FROM t WHERE i > 1000000").await?).is_empty());
    Ok(())
}

#[tokio::test]
async fn stored_samples_roll_up_to_a_uniform_sample_of_all_days() -> Result<()> {
    // Two days of 20 and 80 values, a stored sample of 10 per day, their union read: each of
    // the 100 values is in the month's sample with probability 10/100 (see the uniformity
    // test). Days of unequal sizes: a union that took as many rows from each day would
    // sample the short day's values four times as often.
    let (n, k, runs) = (100_usize, 10_usize, 300_u64);
    let ctx = numbers(n as i64, 3)?;
    let day = "CASE WHEN v < 20 THEN 0 ELSE 1 END";
    let mut counts = vec![0_u64; n];
    for _ in 0..runs {
        ctx.sql("DROP TABLE IF EXISTS daily").await?.collect().await?;
        let sql =
            format!("CREATE TABLE daily AS SELECT {day} AS day, sample_sketch(v, {k}) AS s FROM u GROUP BY {day}");
        ctx.sql(&sql).await?.collect().await?;
        let items = sampled(&one(&ctx, "SELECT sketch_sample(sample_union(s)) FROM daily").await?);
        assert_eq!(items.len(), k);
        items.iter().for_each(|&v| counts[v as usize] += 1);
    }
    let expected = vec![(runs * k as u64) as f64 / n as f64; n];
    let p = k as f64 / n as f64;
    let (statistic, tolerance) = pearson(&counts, &expected, (n - 1) as f64, (1.0 - p) * n as f64 / (n - 1) as f64);
    assert!(statistic < tolerance, "χ² = {statistic} ≥ {tolerance}: {counts:?}");

    // The stored sampler is the crate's: it decodes in Rust, and has seen its day's rows.
    let stored = query(&ctx, "SELECT day, s FROM daily ORDER BY day").await?;
    let s = stored[0].column(1).as_struct();
    for (row, rows) in [(0, 20), (1, 80)] {
        let sampler = Reservoir::<u32>::from_bytes(s.column(0).as_binary::<i32>().value(row)).expect("a reservoir");
        assert_eq!((sampler.seen(), sampler.len()), (rows, k));
        assert_eq!(s.column(1).as_list::<i32>().value(row).len(), k);
    }

    // Stored in a Parquet file and read back (as BinaryView): the same samples, and they merge.
    let dir = std::env::temp_dir().join(format!("synopses-samples-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("daily.parquet");
    let path = path.to_str().expect("a UTF-8 path");
    ctx.sql("SELECT * FROM daily").await?.write_parquet(path, Default::default(), None).await?;
    ctx.register_parquet("stored", path, ParquetReadOptions::default()).await?;
    let mut from_file = sampled(&one(&ctx, "SELECT sketch_sample(sample_union(s)) FROM stored").await?);
    let mut from_memory = sampled(&one(&ctx, "SELECT sketch_sample(sample_union(s)) FROM daily").await?);
    from_file.sort_unstable();
    from_memory.sort_unstable();
    assert_eq!(from_file, from_memory);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[tokio::test]
async fn stored_samples_refuse_what_does_not_merge() -> Result<()> {
    let ctx = numbers(100, 2)?;
    for (sql, needle) in [
        // A sample merged with itself would count its rows twice.
        ("SELECT sample_union(s) FROM (SELECT sample_sketch(v, 5) AS s FROM u) CROSS JOIN (VALUES (1), (2))", "stream"),
        (
            "SELECT sample_union(s) FROM (SELECT sample_sketch(v, 5) AS s FROM u \
             UNION ALL SELECT weighted_sample_sketch(v, 1, 5) FROM u)",
            "weighted",
        ),
        (
            "SELECT sample_union(s) FROM (SELECT sample_sketch(v, 5) AS s FROM u UNION ALL SELECT sample_sketch(v, 6) FROM u)",
            "capacity",
        ),
        ("SELECT sketch_sample(named_struct('sampler', X'00010203', 'values', [1, 2]))", "sketch_sample"),
    ] {
        let message = execution_error(&ctx, sql).await;
        assert!(message.contains(needle), "`{sql}`: {message}");
    }
    // A sampler whose positions name values the list does not have.
    let mut sampler = Reservoir::<u32>::new(3, 1).expect("a size");
    sampler.observe_all(0..10_u32);
    for values in ["[]", "[1, 2]"] {
        let sql = format!(
            "SELECT sketch_sample(named_struct('sampler', X'{}', 'values', {values}))",
            hex(&sampler.to_bytes())
        );
        let message = execution_error(&ctx, &sql).await;
        assert!(message.contains("sketch_sample") && message.contains("not among"), "`{sql}`: {message}");
    }
    for (sql, needle) in
        [("SELECT sample_union(s) FROM (SELECT sample_sketch(v, 5) AS s FROM u) CROSS JOIN (VALUES (1), (2))", "twice")]
    {
        let message = execution_error(&ctx, sql).await;
        assert!(message.contains(needle), "`{sql}`: {message}");
    }
    // A sample of nothing: the empty sample, and no stored samples: NULL.
    assert!(sampled(&one(&ctx, "SELECT sketch_sample(sample_sketch(v, 3)) FROM u WHERE v < 0").await?).is_empty());
    let none = one(&ctx, "SELECT sample_union(s) FROM (SELECT sample_sketch(v, 3) AS s FROM u) WHERE false").await?;
    assert!(none.is_null(0));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Quantiles
// ---------------------------------------------------------------------------------------------

/// The non-null values of column `i` in the rows `rows`, sorted.
fn sorted_values(rows: impl Iterator<Item = usize>) -> Vec<f64> {
    let mut values: Vec<f64> = rows.filter_map(value).map(|v| v as f64).collect();
    values.sort_by(f64::total_cmp);
    values
}

/// Checks a KLL sketch of `values` (sorted): the count and extremes exact, and the rank of
/// every 100th value within `3ε` of the truth. DataFusion seeds each partial aggregate's coins
/// from the operating system, so these checks are random; the tolerance is derived so that a
/// correct sketch practically never fails them. `ε` (the sketch's `rank_error`) is the 99th
/// percentile of a per-query error that is roughly normal, so `σ ≤ ε/2.58` (measured: about
/// ε/5), and `3ε ≥ 7.7σ`: a two-sided tail below 1.4·10⁻¹⁴ per query, below 10⁻¹⁰ over the
/// few thousand queries of this file. A lost or doubled partition moves ranks by far more.
const KLL_SLACK: f64 = 3.0;

fn check_kll(sketch: &synopses::quantiles::Kll<f64>, values: &[f64], label: &str) {
    use synopses::quantiles::Search;
    assert_eq!(sketch.count(), values.len() as u64, "{label}");
    assert_eq!((sketch.min(), sketch.max()), (values.first(), values.last()), "{label}");
    for i in 1..100 {
        let x = values[values.len() * i / 100];
        let truth = values.partition_point(|&v| v <= x) as f64 / values.len() as f64;
        let est = sketch.rank(&x, Search::Inclusive).expect("ordered").expect("not empty");
        assert!((est - truth).abs() <= KLL_SLACK * sketch.rank_error(), "{label}: rank of {x}: {est} against {truth}");
    }
}

#[tokio::test]
async fn quantile_sketches_agree_with_the_rust_ones() -> Result<()> {
    use synopses::quantiles::{DDSketch, Kll};
    let values = sorted_values(0..ROWS);
    for partitions in [1, 8] {
        let ctx = context(partitions)?;
        let batches =
            query(&ctx, "SELECT dd_sketch(i), dd_sketch(n, 0.02), kll_sketch(i), kll_sketch(n, 50) FROM t").await?;
        let row = &batches[0];
        // DDSketch merges exactly: the very sketch of the values, whatever the partitioning.
        let mut want = DDSketch::new(0.01).unwrap();
        values.iter().for_each(|&x| want.add(x).unwrap());
        assert_eq!(DDSketch::from_bytes(&bytes(row.column(0))).expect("a DDSketch"), want);
        let mut want2 = DDSketch::new(0.02).unwrap();
        values.iter().for_each(|&x| want2.add(x).unwrap());
        assert_eq!(DDSketch::from_bytes(&bytes(row.column(1))).expect("a DDSketch"), want2);
        // KLL flips coins: the count and extremes exact, the ranks within the bound.
        let kll = Kll::<f64>::from_bytes(&bytes(row.column(2))).expect("a KLL sketch");
        assert_eq!(kll.k(), 200);
        check_kll(&kll, &values, &format!("{partitions} partitions"));
        let small = Kll::<f64>::from_bytes(&bytes(row.column(3))).expect("a KLL sketch");
        assert_eq!(small.k(), 50);
        check_kll(&small, &values, &format!("k 50, {partitions} partitions"));

        // The quantile aggregates answer what their sketch answers.
        let batches = query(&ctx, "SELECT dd_quantile(i, 0.5), dd_quantile(i, 0.99, 0.02), kll_quantile(i, 0.9), kll_quantile(i, 0.9, 400) FROM t").await?;
        let row = &batches[0];
        let float = |c: usize| row.column(c).as_primitive::<datafusion::arrow::datatypes::Float64Type>().value(0);
        assert_eq!(float(0), want.quantile(0.5).unwrap().unwrap());
        assert_eq!(float(1), want2.quantile(0.99).unwrap().unwrap());
        for c in [2, 3] {
            let rank = values.partition_point(|&v| v <= float(c)) as f64 / values.len() as f64;
            assert!(
                (rank - 0.9).abs() <= KLL_SLACK * 0.0133,
                "{partitions} partitions: p90 {} has rank {rank}",
                float(c)
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn quantiles_by_group_with_filters_and_rollups() -> Result<()> {
    use synopses::quantiles::{DDSketch, Kll};
    for partitions in [1, 8] {
        let ctx = context(partitions)?;
        let sql = "SELECT g, dd_sketch(i) FILTER (WHERE n > 0), kll_sketch(i), kll_quantile(i, 0.5), dd_quantile(i, 0.5) \
                   FROM t GROUP BY g";
        let mut groups = 0;
        for batch in query(&ctx, sql).await? {
            let g = batch.column(0).as_primitive::<datafusion::arrow::datatypes::Int32Type>();
            for row in 0..batch.num_rows() {
                let group = g.value(row) as usize;
                let values = sorted_values((0..ROWS).filter(|r| r % 7 == group));
                let mut want = DDSketch::new(0.01).unwrap();
                values.iter().filter(|&&x| x > 0.0).for_each(|&x| want.add(x).unwrap());
                let got = DDSketch::from_bytes(batch.column(1).as_binary::<i32>().value(row)).expect("a DDSketch");
                assert_eq!(got, want, "group {group}");
                let kll = Kll::<f64>::from_bytes(batch.column(2).as_binary::<i32>().value(row)).expect("a KLL sketch");
                check_kll(&kll, &values, &format!("group {group}"));
                let median = batch.column(3).as_primitive::<datafusion::arrow::datatypes::Float64Type>().value(row);
                let rank = values.partition_point(|&v| v <= median) as f64 / values.len() as f64;
                assert!((rank - 0.5).abs() <= KLL_SLACK * 0.0133, "group {group}: median {median} has rank {rank}");
                let mut all = DDSketch::new(0.01).unwrap();
                values.iter().for_each(|&x| all.add(x).unwrap());
                let dd = batch.column(4).as_primitive::<datafusion::arrow::datatypes::Float64Type>().value(row);
                assert_eq!(dd, all.quantile(0.5).unwrap().unwrap(), "group {group}");
                groups += 1;
            }
        }
        assert_eq!(groups, 7);

        // A rollup: sketches per group stored, then merged and read without the rows.
        ctx.sql("CREATE TABLE q AS SELECT g, kll_sketch(i) AS k, dd_sketch(i) AS d FROM t GROUP BY g")
            .await?
            .collect()
            .await?;
        let batches = query(&ctx, "SELECT sketch_union(k), sketch_union(d) FROM q").await?;
        let values = sorted_values(0..ROWS);
        let kll = Kll::<f64>::from_bytes(&bytes(batches[0].column(0))).expect("a KLL sketch");
        check_kll(&kll, &values, "the union of the groups");
        let mut want = DDSketch::new(0.01).unwrap();
        values.iter().for_each(|&x| want.add(x).unwrap());
        assert_eq!(DDSketch::from_bytes(&bytes(batches[0].column(1))).expect("a DDSketch"), want);

        let sql = "SELECT sketch_quantile(sketch_union(k), 0.25), sketch_rank(sketch_union(k), 0), \
                   sketch_quantile(sketch_union(d), 0.25) FROM q";
        let row = &query(&ctx, sql).await?[0];
        let float = |c: usize| row.column(c).as_primitive::<datafusion::arrow::datatypes::Float64Type>().value(0);
        let rank = values.partition_point(|&v| v <= float(0)) as f64 / values.len() as f64;
        assert!((rank - 0.25).abs() <= KLL_SLACK * 0.0133, "p25 {} has rank {rank}", float(0));
        let truth = values.partition_point(|&v| v <= 0.0) as f64 / values.len() as f64;
        assert!((float(1) - truth).abs() <= KLL_SLACK * 0.0133, "rank of 0: {} against {truth}", float(1));
        assert_eq!(float(2), want.quantile(0.25).unwrap().unwrap());
        // Per row, and NULL for a NULL sketch or argument.
        let sql = "SELECT sketch_quantile(k, 0.5), sketch_rank(k, NULL), sketch_quantile(NULL, 0.5) FROM q";
        let batches = query(&ctx, sql).await?;
        assert_eq!(batches.iter().map(|b| b.column(0).null_count()).sum::<usize>(), 0);
        assert!(batches.iter().all(|b| b.column(1).null_count() == b.num_rows()));
        assert!(batches.iter().all(|b| b.column(2).null_count() == b.num_rows()));
    }
    Ok(())
}

#[tokio::test]
async fn quantile_functions_refuse_bad_input() -> Result<()> {
    let ctx = context(2)?;
    for (sql, function) in [
        ("SELECT kll_sketch(s) FROM t", "kll_sketch"),
        ("SELECT kll_sketch(i, 4) FROM t", "kll_sketch"),
        ("SELECT kll_sketch(i, i) FROM t", "kll_sketch"),
        ("SELECT dd_sketch(i, 2.0) FROM t", "dd_sketch"),
        ("SELECT kll_quantile(i, 1.5) FROM t", "kll_quantile"),
        ("SELECT kll_quantile(i) FROM t", "kll_quantile"),
        ("SELECT dd_quantile(i, n) FROM t", "dd_quantile"),
        ("SELECT sketch_quantile(1, 0.5)", "sketch_quantile"),
        ("SELECT sketch_rank(kll_sketch(i)) FROM t", "sketch_rank"),
    ] {
        let message = planning_error(&ctx, sql).await;
        assert!(message.contains(function), "`{sql}`: {message}");
    }
    ctx.sql("CREATE TABLE mixed AS SELECT kll_sketch(i) AS s FROM t UNION ALL SELECT ull_sketch(i) FROM t")
        .await?
        .collect()
        .await?;
    for (sql, needle) in [
        ("SELECT sketch_union(s) FROM mixed", "cannot merge"),
        ("SELECT sketch_rank(dd_sketch(i), 3) FROM t", "expected a KLL sketch"),
        ("SELECT sketch_quantile(kll_sketch(i), 2) FROM t", "rank"),
        ("SELECT sketch_quantile(ull_sketch(i), 0.5) FROM t", "not the bytes of a quantile sketch"),
        ("SELECT sketch_estimate(kll_sketch(i)) FROM t", "not the bytes of a sketch"),
        ("SELECT sketch_quantile(CAST('garbage' AS BYTEA), 0.5)", "sketch_quantile"),
    ] {
        let message = execution_error(&ctx, sql).await;
        assert!(message.contains(needle), "`{sql}`: {message}");
    }
    // NaN and infinities are counted as rejected, never ordered; NULLs are skipped.
    let row = &query(&ctx, "SELECT kll_sketch(x), dd_sketch(x) FROM (VALUES (1.0), ('NaN'::double), ('Infinity'::double), (NULL), (2.0)) AS v(x)").await?[0];
    let kll = synopses::quantiles::Kll::<f64>::from_bytes(&bytes(row.column(0))).expect("a KLL sketch");
    assert_eq!((kll.count(), kll.rejected()), (3, 1));
    let dd = synopses::quantiles::DDSketch::from_bytes(&bytes(row.column(1))).expect("a DDSketch");
    assert_eq!((dd.count(), dd.rejected()), (2, 2));
    // No rows: NULL.
    let empty = one(&ctx, "SELECT kll_quantile(i, 0.5) FROM t WHERE i > 1000000").await?;
    assert!(empty.is_null(0));
    Ok(())
}
