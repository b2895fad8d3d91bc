//! A month of visits, sketched per day and country, then rolled up without the visits: the
//! pattern a data engineer copies.
//!
//! ```sh
//! cargo run --release -p synopses-datafusion --example rollup
//! ```
//!
//! 1. Register the functions with the session.
//! 2. Build a table of daily sketches (`ull_sketch ... GROUP BY day, country`): this is what a
//!    nightly job appends to, and all that needs keeping.
//! 3. Answer any period from the stored sketches: `sketch_union` merges the days,
//!    `sketch_estimate` and the bounds read the result. Distinct users do not add up across
//!    days (a user who came twice counts once); merged sketches count them right.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::pretty::print_batches;
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;

/// Days in the month, visits a day, and the users who visit (each on about 6 of the 30 days:
/// the daily counts add up to about five times the monthly one).
const DAYS: i32 = 30;
const VISITS_PER_DAY: usize = 200_000;
const USERS: u64 = 1_000_000;

/// A month of visits: (day, country, user id), from a fixed-seed generator.
fn visits() -> Result<MemTable> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("day", DataType::Int32, false),
        Field::new("country", DataType::Utf8, false),
        Field::new("user_id", DataType::Int64, false),
    ]));
    let countries = ["de", "fr", "jp", "us"];
    let mut state = 0x5EED_u64;
    let mut next = move || {
        // splitmix64: a portable, seeded stream of 64-bit values.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut batches = Vec::new();
    for day in 1..=DAYS {
        let users: Vec<u64> = (0..VISITS_PER_DAY).map(|_| next() % USERS).collect();
        let country: StringArray = users.iter().map(|u| Some(countries[(u % 4) as usize])).collect();
        let columns: Vec<Arc<dyn Array>> = vec![
            Arc::new(Int32Array::from(vec![day; users.len()])),
            Arc::new(country),
            Arc::new(Int64Array::from_iter_values(users.iter().map(|&u| u as i64))),
        ];
        batches.push(RecordBatch::try_new(Arc::clone(&schema), columns)?);
    }
    MemTable::try_new(schema, vec![batches])
}

#[tokio::main]
async fn main() -> Result<()> {
    let ctx = SessionContext::new();
    synopses_datafusion::register(&ctx);
    ctx.register_table("visits", Arc::new(visits()?))?;

    // The nightly job: one sketch per day and country (8 KiB at most each; small days less).
    ctx.sql(
        "CREATE TABLE daily AS \
         SELECT day, country, ull_sketch(user_id) AS users, COUNT(*) AS visits \
         FROM visits GROUP BY day, country",
    )
    .await?
    .collect()
    .await?;
    let stored = ctx.sql("SELECT users FROM daily").await?.collect().await?;
    let (sketches, bytes) = stored.iter().map(|b| b.column(0).as_binary::<i32>()).fold((0, 0), |(n, bytes), column| {
        (n + column.len(), bytes + column.iter().flatten().map(<[u8]>::len).sum::<usize>())
    });
    println!(
        "Stored: {sketches} daily sketches, {bytes} bytes in all, for {} visits.\n",
        DAYS as usize * VISITS_PER_DAY
    );

    // The month per country, from the sketches alone, against the exact answer from the rows.
    let month = ctx
        .sql(
            "SELECT d.country, \
                    SUM(d.visits) AS visits, \
                    CAST(sketch_estimate(sketch_union(d.users)) AS BIGINT) AS users, \
                    CAST(sketch_lower_bound(sketch_union(d.users)) AS BIGINT) AS low_95, \
                    CAST(sketch_upper_bound(sketch_union(d.users)) AS BIGINT) AS high_95 \
             FROM daily d GROUP BY d.country ORDER BY d.country",
        )
        .await?;
    println!("\nThe month, from the stored sketches (95 % bounds):");
    print_batches(&month.collect().await?)?;
    let exact = ctx
        .sql("SELECT country, COUNT(DISTINCT user_id) AS users FROM visits GROUP BY country ORDER BY country")
        .await?;
    println!("\nThe month, exactly, from the visits (what the sketches saved us from rescanning):");
    print_batches(&exact.collect().await?)?;

    // Adding the days' counts instead of merging their sketches counts returning users again.
    let added = ctx
        .sql(
            "SELECT CAST(SUM(sketch_estimate(users)) AS BIGINT) AS added_daily_counts, \
                    CAST(sketch_estimate(sketch_union(users)) AS BIGINT) AS merged \
             FROM daily",
        )
        .await?;
    println!("\nAll countries: the daily counts added, against the merged sketches:");
    print_batches(&added.collect().await?)?;

    // Any other period is another union: the last week.
    let week = ctx
        .sql(&format!(
            "SELECT CAST(sketch_estimate(sketch_union(users)) AS BIGINT) AS users_last_7_days FROM daily WHERE day > {}",
            DAYS - 7
        ))
        .await?;
    print_batches(&week.collect().await?)?;
    Ok(())
}
