//! The coded UltraLogLog on one stream, against DataSketches' CPC: serialized size and the
//! memory-variance product of each estimator, over `n` from `10·m` to `1000·m`.
//!
//! ```text
//! cargo run --release -p synopses-benches --example compressed_products            # 1000 trials, about a minute
//! cargo run --release -p synopses-benches --example compressed_products -- 300
//! ```
//!
//! Each trial feeds `n` distinct items (`trial · 2^40 + i`: independent trials, every sketch at
//! its default seed) to an UltraLogLog and a CPC sketch of the same precision, and reads the
//! UltraLogLog's martingale and maximum-likelihood estimates, CPC's (HIP, its martingale, on a
//! sketch that saw one stream), and the serialized sizes (`to_compressed_bytes`, which keeps the
//! martingale; `serialize`). The product is `8 · mean bytes · MSE` of the relative error, with
//! the standard error of the MSE (`sd((n̂/n − 1)²)/√T`) scaled alike. After a merge, where
//! both martingales end, see `per_byte`.

use std::error::Error;

use datasketches::cpc::CpcSketch;
use synopses::cardinality::{UltraLogLog, UltraLogLogEstimator};

/// Sums of squared relative errors and of their squares, for an MSE and its standard error.
#[derive(Default)]
struct Errors {
    sum: f64,
    sum_of_squares: f64,
}

impl Errors {
    fn add(&mut self, estimate: f64, n: f64) {
        let e = (estimate / n - 1.0).powi(2);
        self.sum += e;
        self.sum_of_squares += e * e;
    }

    /// `8 · bytes · MSE ± its standard error`, over `trials`.
    fn product(&self, bytes: f64, trials: f64) -> String {
        let mse = self.sum / trials;
        let se = ((self.sum_of_squares / trials - mse * mse) / trials).sqrt();
        format!("{:.2} ± {:.2}", 8.0 * bytes * mse, 8.0 * bytes * se)
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let trials: u64 = std::env::args().nth(1).map_or(Ok(1000), |s| s.parse())?;
    println!("| p | n | coded, B | martingale | ML | CPC, B | CPC (HIP) |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for p in [8_u8, 10, 12, 14] {
        let m = 1_u64 << p;
        // 1000·m only where it is quick: at p = 14 it is 16 million items a trial.
        let multiples: &[u64] = if p <= 10 { &[10, 100, 1000] } else { &[10, 100] };
        for &multiple in multiples {
            let n = multiple * m;
            let (mut coded_bytes, mut cpc_bytes) = (0.0, 0.0);
            let (mut martingale, mut ml, mut hip) = (Errors::default(), Errors::default(), Errors::default());
            for trial in 0..trials {
                let items = trial << 40..(trial << 40) + n;
                let mut ull = UltraLogLog::new(p)?;
                ull.observe_all(items.clone());
                let mut cpc = CpcSketch::new(p)?;
                items.for_each(|x| cpc.update(x));
                let nf = n as f64;
                coded_bytes += ull.to_compressed_bytes().len() as f64;
                martingale.add(ull.martingale_estimate().ok_or("one stream keeps its martingale")?, nf);
                ml.add(ull.register_estimate(UltraLogLogEstimator::MaximumLikelihood), nf);
                cpc_bytes += cpc.serialize().len() as f64;
                hip.add(cpc.estimate(), nf);
            }
            let t = trials as f64;
            let (coded, theirs) = (coded_bytes / t, cpc_bytes / t);
            println!(
                "| {p} | {multiple}·m | {coded:.0} | {} | {} | {theirs:.0} | {} |",
                martingale.product(coded, t),
                ml.product(coded, t),
                hip.product(theirs, t)
            );
        }
    }
    Ok(())
}
