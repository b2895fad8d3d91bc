//! The distinct-count aggregates against DataFusion's `approx_distinct`, on the same table.
//!
//! Run with `cargo bench -p synopses-datafusion --bench distinct` (a release build of
//! DataFusion: about 25 minutes the first time on two cores). Ids read
//! `datafusion/<query>/<function>`.
//!
//! Data: 10^7 rows in 4 partitions of a memory table, `x` a random `Int64` drawn from 5·10^6
//! distinct values (each row twice), `g` one of 1 000 groups. Each iteration runs one query to
//! the end (planning included). The error over many data seeds and the state per group are
//! in `examples/versus_approx_distinct.rs`, which prints the README's table.

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use datafusion::arrow::array::{Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};
use tokio::runtime::Runtime;

const ROWS: usize = 10_000_000;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The table `t(g, x)` and a table `daily` of 30 stored daily sketches of `x`.
fn context(runtime: &Runtime) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(4));
    synopses_datafusion::register(&ctx);
    let schema =
        Arc::new(Schema::new(vec![Field::new("g", DataType::Int64, false), Field::new("x", DataType::Int64, false)]));
    let mut state = 7;
    let values: Vec<i64> = (0..ROWS / 2).map(|_| splitmix(&mut state) as i64).collect();
    let per = ROWS / 4;
    let partitions = (0..4)
        .map(|p| {
            (p * per..(p + 1) * per)
                .step_by(65_536)
                .map(|start| {
                    let end = (start + 65_536).min((p + 1) * per);
                    let g = Int64Array::from_iter_values((start..end).map(|r| r as i64 % 1000));
                    let x = Int64Array::from_iter_values((start..end).map(|r| values[r % values.len()]));
                    RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(g), Arc::new(x)])
                        .expect("the schema's columns")
                })
                .collect()
        })
        .collect();
    ctx.register_table("t", Arc::new(MemTable::try_new(schema, partitions).expect("a table"))).expect("registered");
    runtime.block_on(async {
        let sql = "CREATE TABLE daily AS SELECT g % 30 AS day, ull_sketch(x) AS users FROM t GROUP BY g % 30";
        ctx.sql(sql).await.expect("planned").collect().await.expect("ran");
    });
    ctx
}

fn bench_distinct(c: &mut Criterion) {
    let runtime = Runtime::new().expect("a runtime");
    let ctx = context(&runtime);
    let run = |sql: &str| {
        runtime.block_on(async { ctx.sql(sql).await.expect("planned").collect().await.expect("ran") });
    };
    for (query, suffix) in [("no_groups", ""), ("groups_1000", " GROUP BY g")] {
        let mut group = c.benchmark_group(format!("datafusion/{query}"));
        group.sample_size(10).throughput(Throughput::Elements(ROWS as u64));
        for function in ["approx_distinct", "distinct_count", "distinct_count_hll", "distinct_count_ell"] {
            group.bench_function(function, |b| b.iter(|| run(&format!("SELECT {function}(x) FROM t{suffix}"))));
        }
        group.finish();
    }
    let mut group = c.benchmark_group("datafusion/month");
    group.sample_size(10);
    group.bench_function("sketch_union_of_30_days", |b| {
        b.iter(|| run("SELECT sketch_estimate(sketch_union(users)) FROM daily"))
    });
    group.bench_function("distinct_count_rescan", |b| b.iter(|| run("SELECT distinct_count(x) FROM t")));
    group.bench_function("approx_distinct_rescan", |b| b.iter(|| run("SELECT approx_distinct(x) FROM t")));
    group.finish();
}

criterion_group!(benches, bench_distinct);
criterion_main!(benches);
