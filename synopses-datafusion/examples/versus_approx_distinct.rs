//! `distinct_count` (UltraLogLog, and the HyperLogLog and ExaLogLog variants) against
//! DataFusion's built-in `approx_distinct` (a HyperLogLog of 16 384 one-byte registers): the
//! error over many data seeds, the state each group keeps, the time of one query, and a
//! month's count from 30 stored daily sketches against rescanning the rows.
//!
//! ```sh
//! cargo run --release -p synopses-datafusion --example versus_approx_distinct
//! ```
//!
//! Every table has 4 partitions, so every answer comes from merged partial states, as it
//! does on a real table; each seed draws new distinct values. `SCALE` (default 1) divides
//! the sizes, for a quick run in the `dev` profile.

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, UInt64Type};
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::prelude::{SessionConfig, SessionContext};

const FUNCTIONS: [&str; 4] = ["approx_distinct", "distinct_count", "distinct_count_hll", "distinct_count_ell"];

/// Rounds of the timings. Each round runs every query of a row once, in turn, so that a
/// slow spell of the machine (two shared cores here) falls on all of them alike.
const ROUNDS: usize = 15;

/// Each query's median and best time over [`ROUNDS`] interleaved rounds, as "median (best)"
/// in ms.
async fn timed(ctx: &SessionContext, queries: &[String]) -> Result<Vec<String>> {
    let mut times = vec![Vec::with_capacity(ROUNDS); queries.len()];
    for _ in 0..ROUNDS {
        for (sql, times) in queries.iter().zip(&mut times) {
            let start = Instant::now();
            let batches = ctx.sql(sql).await?.collect().await?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
            assert!(batches.iter().map(RecordBatch::num_rows).sum::<usize>() > 0);
        }
    }
    Ok(times
        .into_iter()
        .map(|mut t| {
            t.sort_by(f64::total_cmp);
            format!("{:.1} ({:.1})", t[t.len() / 2], t[0])
        })
        .collect())
}

/// splitmix64 from `state`: a portable, seeded stream of 64-bit values.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A table `t(g, x)` of `rows` rows in 4 partitions: `x` distinct random values (`n` of them,
/// each repeated `rows / n` times), `g` one of `groups` groups.
fn context(rows: usize, n: usize, groups: i64, seed: u64) -> Result<SessionContext> {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(4));
    synopses_datafusion::register(&ctx);
    let schema =
        Arc::new(Schema::new(vec![Field::new("g", DataType::Int64, false), Field::new("x", DataType::Int64, false)]));
    let mut state = seed;
    let values: Vec<i64> = (0..n).map(|_| splitmix(&mut state) as i64).collect();
    let per_partition = rows.div_ceil(4);
    let mut partitions = Vec::new();
    for p in 0..4 {
        let mut batches = Vec::new();
        for start in (p * per_partition..((p + 1) * per_partition).min(rows)).step_by(65_536) {
            let end = (start + 65_536).min(((p + 1) * per_partition).min(rows));
            let g = Int64Array::from_iter_values((start..end).map(|r| r as i64 % groups));
            let x = Int64Array::from_iter_values((start..end).map(|r| values[r % n]));
            batches.push(RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(g), Arc::new(x)])?);
        }
        partitions.push(batches);
    }
    ctx.register_table("t", Arc::new(MemTable::try_new(schema, partitions)?))?;
    Ok(ctx)
}

/// The first row of a one-row query, as `u64` counts.
async fn counts(ctx: &SessionContext, sql: &str) -> Result<Vec<u64>> {
    let batches = ctx.sql(sql).await?.collect().await?;
    let batch = batches.iter().find(|b| b.num_rows() > 0).expect("a row");
    Ok(batch.columns().iter().map(|c| c.as_primitive::<UInt64Type>().value(0)).collect())
}

#[tokio::main]
async fn main() -> Result<()> {
    let scale: usize = std::env::var("SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let select = FUNCTIONS.map(|f| format!("{f}(x)")).join(", ");

    println!("Relative error over data seeds (root mean square, in %; 4 partitions, merged states):\n");
    println!("| distinct values | seeds | {} |", FUNCTIONS.join(" | "));
    println!("|---|---|---|---|---|---|");
    for (n, seeds) in [(1_000, 200), (10_000, 200), (100_000, 100), (1_000_000, 40)] {
        let (n, seeds) = (n / scale, (seeds / scale).max(4));
        let mut squares = [0.0_f64; FUNCTIONS.len()];
        for seed in 0..seeds {
            let ctx = context(n, n, 1, seed as u64 + 1)?;
            let got = counts(&ctx, &format!("SELECT {select} FROM t")).await?;
            for (square, estimate) in squares.iter_mut().zip(got) {
                *square += (estimate as f64 / n as f64 - 1.0).powi(2);
            }
        }
        let rmse = squares.map(|s| format!("{:.3}", 100.0 * (s / seeds as f64).sqrt()));
        println!("| {n} | {seeds} | {} |", rmse.join(" | "));
    }

    let (rows, groups) = (10_000_000 / scale, 1_000);
    let ctx = context(rows, rows / 2, groups, 7)?;
    println!("\nState per group, {rows} rows (each value twice) in {groups} groups (bytes of the partial state):\n");
    let sketches =
        ctx.sql("SELECT ull_sketch(x), hll_sketch(x), ell_sketch(x) FROM t GROUP BY g").await?.collect().await?;
    let mut bytes = [0_usize; 3];
    for batch in &sketches {
        for (total, column) in bytes.iter_mut().zip(batch.columns()) {
            *total += column.as_binary::<i32>().iter().flatten().map(<[u8]>::len).sum::<usize>();
        }
    }
    let groups_seen = sketches.iter().map(RecordBatch::num_rows).sum::<usize>().max(1);
    println!("| approx_distinct | distinct_count (UltraLogLog) | distinct_count_hll | distinct_count_ell |");
    println!("|---|---|---|---|");
    println!(
        "| 16384 (its registers) | {} | {} | {} |",
        bytes[0] / groups_seen,
        bytes[1] / groups_seen,
        bytes[2] / groups_seen
    );

    println!("\nTime of one query over the {rows} rows (ms, median and best of {ROUNDS} interleaved rounds):\n");
    println!("| query | {} |", FUNCTIONS.join(" | "));
    println!("|---|---|---|---|---|");
    for (label, suffix) in [("no groups", ""), ("1 000 groups", " GROUP BY g")] {
        let queries: Vec<String> = FUNCTIONS.iter().map(|f| format!("SELECT {f}(x) FROM t{suffix}")).collect();
        let cells = timed(&ctx, &queries).await?;
        println!("| {label} | {} |", cells.join(" | "));
    }
    // The rollup: 30 stored daily sketches merged, against rescanning the month's rows.
    ctx.sql("CREATE TABLE daily AS SELECT g % 30 AS day, ull_sketch(x) AS users FROM t GROUP BY g % 30")
        .await?
        .collect()
        .await?;
    println!(
        "\nThe month's distinct count (ms, median and best of {ROUNDS} interleaved rounds): 30 stored daily \
         sketches merged, or the rows rescanned:\n"
    );
    println!("| sketch_union of 30 daily ull_sketch | distinct_count over the rows | approx_distinct over the rows |");
    println!("|---|---|---|");
    let queries = [
        "SELECT sketch_estimate(sketch_union(users)) FROM daily".to_string(),
        "SELECT distinct_count(x) FROM t".to_string(),
        "SELECT approx_distinct(x) FROM t".to_string(),
    ];
    println!("| {} |", timed(&ctx, &queries).await?.join(" | "));
    let exact = ctx.sql("SELECT COUNT(DISTINCT x) FROM t").await?.collect().await?;
    let exact = exact[0].column(0).as_primitive::<Int64Type>().value(0);
    println!("\n(The table holds {exact} distinct values.)");
    Ok(())
}
