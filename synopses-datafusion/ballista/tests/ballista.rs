//! The same queries on Ballista, DataFusion's distributed engine: a scheduler and two
//! executors on the loopback interface, started here, each with the functions registered.
//! Every partial aggregate runs in an executor task, its state column travels as Arrow IPC
//! (a shuffle file, fetched over Arrow Flight), and the final stage merges the decoded
//! states: the answers must equal one process's.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ballista::prelude::SessionContextExt;
use datafusion::arrow::array::{AsArray, Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::Result;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use synopses::cardinality::{HyperLogLog, UltraLogLog};
use synopses::core::Mergeable;
use synopses::frequency::CountMin;
use synopses::quantiles::{DDSketch, Kll};
use synopses::sampling::Reservoir;
use synopses_datafusion_ballista::{cluster, session_state};

/// Files of the table, and rows in each.
const FILES: usize = 4;
const ROWS_PER_FILE: usize = 25_000;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("g", DataType::Int32, false),
        Field::new("i", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]))
}

/// Row `r`: a group of 5, an integer with repeats (about 30 000 distinct) and a NULL every 101
/// rows, and a string of it.
fn batch(rows: std::ops::Range<usize>) -> RecordBatch {
    let value = |r: usize| (!r.is_multiple_of(101)).then(|| ((r * 7919) % 30_011) as i64);
    let g: Int32Array = rows.clone().map(|r| (r % 5) as i32).collect();
    let i: Int64Array = rows.clone().map(value).collect();
    let s: StringArray = rows.map(|r| value(r).map(|v| format!("user-{v}"))).collect();
    RecordBatch::try_new(schema(), vec![Arc::new(g), Arc::new(i), Arc::new(s)]).expect("columns of the schema")
}

/// Writes the table as `FILES` Parquet files of several row groups each into `dir`.
fn write_table(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for file in 0..FILES {
        let out = std::fs::File::create(dir.join(format!("part-{file}.parquet")))?;
        let props = WriterProperties::builder().set_max_row_group_row_count(Some(5_000)).build();
        let mut writer = ArrowWriter::try_new(out, schema(), Some(props))?;
        let start = file * ROWS_PER_FILE;
        for chunk in (start..start + ROWS_PER_FILE).step_by(2_500) {
            writer.write(&batch(chunk..chunk + 2_500))?;
        }
        writer.close()?;
    }
    Ok(())
}

async fn rows(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

/// The queries, each ordered so that the two engines' answers compare row by row.
const QUERIES: &[&str] = &[
    "SELECT distinct_count(i), distinct_count_hll(s), distinct_count_ell(i, 12) FROM t",
    "SELECT g, distinct_count(s), sketch_estimate(hll_sketch(i, 12)) FROM t GROUP BY g ORDER BY g",
    "SELECT g, heavy_hitters(i % 40, 64) FROM t GROUP BY g ORDER BY g",
    "SELECT g, sketch_frequency(cms_sketch(i % 1000, 512, 4), 17) FROM t GROUP BY g ORDER BY g",
    "SELECT sketch_contains(bloom_sketch(s, 100000, 0.01), 'user-17'), \
            sketch_contains(bloom_sketch(s, 100000, 0.01), 'nobody') FROM t",
    "SELECT sketch_estimate(sketch_union(d)) FROM (SELECT g, ull_sketch(i) AS d FROM t GROUP BY g)",
    // Random, but of a known size: the samplers' states (bytes and a list of values) travel.
    "SELECT g, cardinality(sample(i, 3)), cardinality(weighted_sample(s, g + 1, 2)) FROM t GROUP BY g ORDER BY g",
    "SELECT cardinality(sketch_sample(sample_union(s))) FROM (SELECT g, sample_sketch(i, 4) AS s FROM t GROUP BY g)",
];

fn table(batches: &[RecordBatch]) -> Result<String> {
    Ok(pretty_format_batches(batches)?.to_string())
}

/// A sketch without its history (its martingale): what a merge of two non-empty parts holds.
fn merged<S: Mergeable + Clone>(s: &S) -> S {
    let mut out = s.clone();
    out.merge(s).expect("the same configuration");
    out
}

fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("synopses-ballista-{}", std::process::id()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ballista_answers_equal_one_process() -> Result<()> {
    let dir = scratch();
    write_table(&dir)?;
    let path = format!("{}/", dir.to_str().expect("a UTF-8 path"));

    let local = SessionContext::new_with_state(session_state(4));
    local.register_parquet("t", &path, ParquetReadOptions::default()).await?;
    let scheduler = cluster(&session_state(4), 2).await?;
    let remote = SessionContext::remote_with_state(&scheduler, session_state(4)).await?;
    // Connecting replaced the state's functions with Ballista's defaults.
    synopses_datafusion::register(&remote);
    remote.register_parquet("t", &path, ParquetReadOptions::default()).await?;

    // The plan Ballista runs is distributed: a stage of partial aggregates writing their
    // states to a shuffle, and a stage of final ones reading them.
    let plan = table(&rows(&remote, &format!("EXPLAIN {}", QUERIES[1])).await?)?;
    let stages = plan.split("Stage[stage_id=").skip(1).collect::<Vec<_>>();
    assert!(stages.len() >= 2, "{plan}");
    assert!(stages[0].contains("ShuffleWriterExec") && stages[0].contains("mode=Partial"), "{plan}");
    assert!(stages[1].contains("mode=FinalPartitioned"), "{plan}");

    for sql in QUERIES {
        let want = table(&rows(&local, sql).await?)?;
        let got = table(&rows(&remote, sql).await?)?;
        assert_eq!(got, want, "{sql}");
    }

    // The sketches themselves, decoded: the registers of one process's.
    for (sql, kind) in [
        ("SELECT g, ull_sketch(s) FROM t GROUP BY g ORDER BY g", "ull"),
        ("SELECT g, hll_sketch(i, 11) FROM t GROUP BY g ORDER BY g", "hll"),
        ("SELECT g, cms_sketch(s, 256, 3) FROM t GROUP BY g ORDER BY g", "cms"),
        ("SELECT g, dd_sketch(i) FROM t GROUP BY g ORDER BY g", "dd"),
        ("SELECT g, kll_sketch(i) FROM t GROUP BY g ORDER BY g", "kll"),
    ] {
        let (want, got) = (rows(&local, sql).await?, rows(&remote, sql).await?);
        let sketches = |batches: &[RecordBatch]| -> Vec<(i32, Vec<u8>)> {
            batches
                .iter()
                .flat_map(|b| {
                    let (g, s) =
                        (b.column(0).as_primitive::<Int32Type>().clone(), b.column(1).as_binary::<i32>().clone());
                    (0..b.num_rows()).map(move |r| (g.value(r), s.value(r).to_vec()))
                })
                .collect()
        };
        let (want, got) = (sketches(&want), sketches(&got));
        assert_eq!(want.len(), 5, "{sql}");
        assert_eq!(got.len(), 5, "{sql}");
        for ((g1, a), (g2, b)) in want.iter().zip(&got) {
            assert_eq!(g1, g2);
            match kind {
                "ull" => assert_eq!(
                    merged(&UltraLogLog::from_bytes(a).expect("ok")),
                    merged(&UltraLogLog::from_bytes(b).expect("ok"))
                ),
                "hll" => assert_eq!(
                    merged(&HyperLogLog::from_bytes(a).expect("ok")),
                    merged(&HyperLogLog::from_bytes(b).expect("ok"))
                ),
                // DDSketch merges exactly; KLL flips coins: the same count and extremes.
                "dd" => assert_eq!(DDSketch::from_bytes(a).expect("ok"), DDSketch::from_bytes(b).expect("ok")),
                "kll" => {
                    let (a, b) = (Kll::<f64>::from_bytes(a).expect("ok"), Kll::<f64>::from_bytes(b).expect("ok"));
                    assert_eq!((a.count(), a.min(), a.max()), (b.count(), b.min(), b.max()));
                }
                _ => assert_eq!(CountMin::from_bytes(a).expect("ok"), CountMin::from_bytes(b).expect("ok")),
            }
        }
    }

    // The samples: random, but the rollup of the groups' stored samples has seen every
    // non-null row, so every partial state reached the final merges.
    let sql = "SELECT sample_union(s) FROM (SELECT g, sample_sketch(i, 4) AS s FROM t GROUP BY g)";
    let union = rows(&remote, sql).await?;
    let union = union.iter().find(|b| b.num_rows() > 0).expect("a row").column(0).as_struct().clone();
    let sampler = Reservoir::<u32>::from_bytes(union.column(0).as_binary::<i32>().value(0)).expect("a reservoir");
    let counted = rows(&local, "SELECT count(i) FROM t").await?;
    let counted = counted[0].column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0);
    assert_eq!((sampler.seen(), sampler.len()), (counted as u64, 4));

    // A foreign sketch fails on the executor, and the error, naming the function, reaches
    // the client.
    let error = remote
        .sql("SELECT sketch_estimate(CAST(s AS BYTEA)) FROM t")
        .await?
        .collect()
        .await
        .expect_err("strings are not sketches");
    assert!(error.to_string().contains("sketch_estimate"), "{error}");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
