//! A virtual-time overload simulator: arrivals, a shedder, a queue and a server. The teaching
//! text is in the [family docs](super).

use std::collections::VecDeque;

use super::controller::{Load, RateController};
use super::policy::RandomDrop;
use super::shedder::{LoadShedder, WithWeights};
use crate::core::random::Stream;
use crate::core::{ConfigError, Operator, Weight};

/// One phase of the arrival process: Poisson arrivals at `rate` items per second for
/// `duration` seconds.
///
/// ```
/// use synopses::shedding::Phase;
/// let burst = Phase { duration: 10.0, rate: 3000.0 };
/// # let _ = burst;
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    /// Seconds the phase lasts.
    pub duration: f64,
    /// Arrivals per second.
    pub rate: f64,
}

/// A run of the simulator at one control step: the state when the step was taken.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Virtual seconds since the start.
    pub time: f64,
    /// Items in the operator (waiting in its input buffer or in service).
    pub queue_len: u64,
    /// Items kept but still at the source, waiting for a credit
    /// ([`Simulation::with_credits`]; always 0 without flow control).
    pub upstream_len: u64,
    /// The keep probability set at this step.
    pub keep_probability: f64,
    /// Items offered per second over the step.
    pub offered_rate: f64,
    /// Items the shedder kept per second over the step (with a bounded `source_buffer`,
    /// including those the source then lost).
    pub kept_rate: f64,
    /// Items the server finished per second over the step: the throughput.
    pub served_rate: f64,
    /// Items offered since the start.
    pub offered_total: u64,
    /// The answer of a running count query at this step: the Horvitz–Thompson count of the
    /// items the server has finished, each weighted `1/p` by the keep probability in force at
    /// its arrival. Against `offered_total` it is the error a user of the answer sees now:
    /// items still queued are missing from it, items shed are stood for by the weights.
    pub counted: f64,
}

impl Snapshot {
    /// The relative error of the running count at this step, `counted / offered_total − 1`
    /// (0 before anything is offered): negative while items wait, near 0 when the answer is
    /// up to date.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, Phase, Simulation};
    ///
    /// // At half the capacity the queue stays short: the count is nearly up to date.
    /// let sim = Simulation::new(vec![Phase { duration: 2.0, rate: 500.0 }], 0.001, 1)?;
    /// let last = sim.run(FixedRate::new(1.0)?).series.last().copied();
    /// assert!(last.is_some_and(|s| s.count_error().abs() < 0.01));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn count_error(&self) -> f64 {
        if self.offered_total == 0 { 0.0 } else { self.counted / self.offered_total as f64 - 1.0 }
    }
}

/// What a simulated run measured.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// Items that arrived.
    pub offered: u64,
    /// Items kept by the shedder and admitted to the operator: each is served, during the run
    /// or after its end (its completion is computed on arrival).
    pub kept: u64,
    /// Items kept by the shedder but lost at a full source (only with
    /// [`Simulation::with_credits`] and a bounded `source_buffer`).
    pub lost: u64,
    /// The most items ever in the operator (its input buffer and the item in service).
    pub max_queue: u64,
    /// The most items ever waiting at the source for a credit.
    pub max_upstream: u64,
    /// Latency (from arrival at the source to the end of service, seconds) of the admitted
    /// items, those still queued at the run's end included: median, 99th percentile and
    /// maximum.
    pub latency_p50: f64,
    /// See `latency_p50`.
    pub latency_p99: f64,
    /// See `latency_p50`.
    pub latency_max: f64,
    /// One snapshot per control step.
    pub series: Vec<Snapshot>,
}

impl Report {
    /// Items kept per second between `from` and `to` (virtual seconds), from the snapshots.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, Phase, Simulation};
    ///
    /// let sim = Simulation::new(vec![Phase { duration: 2.0, rate: 1000.0 }], 0.0005, 1)?;
    /// let report = sim.run(FixedRate::new(0.5)?);
    /// assert!((report.kept_rate(0.0, 2.0) / 500.0 - 1.0).abs() < 0.1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn kept_rate(&self, from: f64, to: f64) -> f64 {
        let (mut kept, mut time) = (0.0, 0.0);
        let mut previous = 0.0;
        for s in &self.series {
            let step = s.time - previous;
            if previous >= from && s.time <= to {
                kept += s.kept_rate * step;
                time += step;
            }
            previous = s.time;
        }
        if time > 0.0 { kept / time } else { 0.0 }
    }
}

/// Credit-based flow control between the source and the operator, as in Flink's network stack
/// (after the credit-based flow control of ATM networks): the operator's input buffer has
/// `buffer` slots, one credit each; the source sends an item only with a credit, and a credit
/// returns to it `delay` seconds after its slot frees. Without a credit the item waits at the
/// source: that is backpressure. A source that cannot wait (a sensor with a small buffer)
/// holds at most `source_buffer` items and loses what arrives beyond them.
///
/// The operator's memory is bounded by `buffer`; the latency is not: the queue moves upstream.
/// With `delay > 0` the buffer must also cover the credits in flight: below
/// `delay / cost + 1` slots the server idles while credits travel, and the throughput falls
/// under the capacity.
///
/// ```
/// use synopses::shedding::{Credits, FixedRate, Phase, Simulation};
///
/// let phases = vec![Phase { duration: 1.0, rate: 500.0 }, Phase { duration: 2.0, rate: 2000.0 }];
/// let durable = Credits { buffer: 32, delay: 0.0, source_buffer: None };
/// let report = Simulation::new(phases, 0.001, 7)?.with_credits(durable)?.run(FixedRate::new(1.0)?);
/// assert!(report.max_queue <= 32); // the operator holds at most its buffer...
/// assert!(report.max_upstream > 1_000); // ...and the burst waits at the source
/// assert_eq!(report.lost, 0);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Credits {
    /// Slots in the operator's input buffer, the item in service included (at least 1).
    pub buffer: u64,
    /// Seconds a credit takes back to the source (finite, at least 0).
    pub delay: f64,
    /// Items the source can hold while it waits for credits; `None` for a durable source (a
    /// log such as Kafka) that holds any number.
    pub source_buffer: Option<u64>,
}

/// A single server behind the shedder: it serves kept items first in, first out, each in
/// `cost` seconds, behind an unbounded buffer or credit-based flow control. The items are
/// their arrival times, with their Horvitz–Thompson weights. Every time is known when an item
/// arrives (the service is deterministic), so each item's entry into the operator and its
/// completion are computed then.
struct Server {
    cost: f64,
    credits: Option<Credits>,
    /// When the server finishes what it has.
    free_at: f64,
    /// The items not yet finished, oldest first: entry into the operator, completion, weight.
    /// Entries and completions both grow along it; the items whose entry is still ahead wait
    /// at the source.
    pending: VecDeque<(f64, f64, f64)>,
    /// With credits, the completion times of the last `buffer` items: the oldest frees the
    /// slot the next item takes.
    recent: VecDeque<f64>,
    /// Items finished, and the sum of their weights.
    served: u64,
    counted: f64,
    lost: u64,
    latencies: Vec<f64>,
    max_queue: u64,
    max_upstream: u64,
}

impl Server {
    fn new(cost: f64, credits: Option<Credits>) -> Self {
        Self {
            cost,
            credits,
            free_at: 0.0,
            pending: VecDeque::new(),
            recent: VecDeque::new(),
            served: 0,
            counted: 0.0,
            lost: 0,
            latencies: Vec::new(),
            max_queue: 0,
            max_upstream: 0,
        }
    }

    /// Finishes the items done by `now`; then the items in the operator and at the source.
    fn state_at(&mut self, now: f64) -> (u64, u64) {
        while let Some(&(_, done, weight)) = self.pending.front() {
            if done > now {
                break;
            }
            self.served += 1;
            self.counted += weight;
            self.pending.pop_front();
        }
        let entered = self.pending.partition_point(|p| p.0 <= now);
        let (queue, upstream) = (entered as u64, (self.pending.len() - entered) as u64);
        self.max_queue = self.max_queue.max(queue);
        self.max_upstream = self.max_upstream.max(upstream);
        (queue, upstream)
    }
}

impl Operator<(f64, Weight)> for Server {
    fn observe(&mut self, (arrival, weight): (f64, Weight)) {
        let (_, upstream) = self.state_at(arrival);
        let mut entry = arrival;
        if let Some(credits) = self.credits {
            if self.recent.len() as u64 >= credits.buffer {
                // The slot of the item `buffer` places back, once its credit is home.
                let credit = self.recent.front().map_or(0.0, |freed| (freed + credits.delay).min(f64::MAX));
                entry = entry.max(credit);
            }
            // An item that must wait for a credit, at a source already holding all it can, is
            // lost; one that finds a credit goes straight on, whatever the source holds.
            if entry > arrival && credits.source_buffer.is_some_and(|room| upstream >= room) {
                self.lost += 1;
                return;
            }
            if self.recent.len() as u64 >= credits.buffer {
                self.recent.pop_front();
            }
        }
        let start = self.free_at.max(entry);
        // Saturating: a cost of 10^308 s an item runs the server's clock past the floats.
        self.free_at = (start + self.cost).min(f64::MAX);
        if self.credits.is_some() {
            self.recent.push_back(self.free_at);
        }
        self.pending.push_back((entry, self.free_at, weight.get()));
        self.latencies.push(self.free_at - arrival);
        self.state_at(arrival);
    }
}

/// A virtual-time overload simulator for tests, examples and teaching: Poisson arrivals in
/// phases, a [`LoadShedder`] with a random drop policy and the controller under test, and a
/// single server that takes `cost_per_item` seconds per item (a capacity of
/// `1 / cost_per_item` items per second), first in, first out. The controller takes a step
/// every tick (10 ms unless [`with_tick`](Self::with_tick) sets another), seeing the items
/// offered, the queue and the waiting time.
///
/// A run keeps a snapshot per step (under 100 bytes each, at most 10^7 steps), 8 bytes per
/// admitted item for the latency percentiles, and, until it is served, about 32 bytes more per
/// admitted item (all of them when the server never catches up).
///
/// ```
/// use synopses::shedding::{FixedRate, Headroom, Phase, Simulation};
///
/// // 1000 items/s of capacity; a 5 s burst at 3× capacity.
/// let phases = vec![Phase { duration: 1.0, rate: 500.0 }, Phase { duration: 5.0, rate: 3000.0 }];
/// let sim = Simulation::new(phases, 0.001, 7)?;
/// let unprotected = sim.run(FixedRate::new(1.0)?);
/// let protected = sim.run(Headroom::new(0.9)?);
/// assert!(unprotected.max_queue > 9_000); // it grows by 2000 items a second
/// assert!(protected.max_queue < 150);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    phases: Vec<Phase>,
    cost_per_item: f64,
    tick: f64,
    seed: u64,
    credits: Option<Credits>,
}

/// The tick of a simulation unless [`Simulation::with_tick`] sets another: 10 ms, or longer
/// for a run beyond 10^5 seconds, so that it takes at most [`MAX_STEPS`] steps.
const DEFAULT_TICK: f64 = 0.01;

/// The most control steps a simulation takes (it keeps a snapshot of each).
const MAX_STEPS: f64 = 1e7;

impl Simulation {
    /// A simulation of `phases`, each with a finite duration and rate at least 0, at most
    /// 10^8 expected arrivals in all, served at `cost_per_item` seconds an item (finite, above
    /// zero), with arrivals and drops drawn from `seed`. The controller steps every 10 ms (or
    /// 10^7 times in all, over a run longer than 10^5 s).
    ///
    /// ```
    /// use synopses::shedding::{Phase, Simulation};
    ///
    /// assert!(Simulation::new(vec![Phase { duration: 1.0, rate: 500.0 }], 0.001, 1).is_ok());
    /// assert!(Simulation::new(vec![Phase { duration: 1.0, rate: -5.0 }], 0.001, 1).is_err());
    /// assert!(Simulation::new(vec![], 0.0, 1).is_err());
    /// ```
    pub fn new(phases: Vec<Phase>, cost_per_item: f64, seed: u64) -> Result<Self, ConfigError> {
        for p in &phases {
            if !(p.duration >= 0.0 && p.duration.is_finite()) {
                return Err(ConfigError::new("duration", p.duration, "a finite number of seconds ≥ 0"));
            }
            if !(p.rate >= 0.0 && p.rate.is_finite()) {
                return Err(ConfigError::new("rate", p.rate, "a finite number of items per second ≥ 0"));
            }
        }
        let expected: f64 = phases.iter().map(|p| p.duration * p.rate).sum();
        if expected > 1e8 {
            return Err(ConfigError::new("phases", expected, "at most 10^8 expected arrivals"));
        }
        if !(cost_per_item > 0.0 && cost_per_item.is_finite()) {
            return Err(ConfigError::new("cost_per_item", cost_per_item, "a finite number of seconds above zero"));
        }
        let duration = Self::duration(&phases);
        if !duration.is_finite() {
            return Err(ConfigError::new("duration", duration, "phases lasting a finite number of seconds in all"));
        }
        let tick = DEFAULT_TICK.max(duration / MAX_STEPS);
        Ok(Self { phases, cost_per_item, tick, seed, credits: None })
    }

    /// The same simulation with a control step every `seconds` (finite, above zero, and at
    /// most 10^7 steps over the run).
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, Phase, Simulation};
    ///
    /// let sim = Simulation::new(vec![Phase { duration: 2.0, rate: 100.0 }], 0.001, 3)?.with_tick(0.5)?;
    /// assert_eq!(sim.run(FixedRate::new(1.0)?).series.len(), 4);
    /// assert!(sim.clone().with_tick(0.0).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_tick(self, seconds: f64) -> Result<Self, ConfigError> {
        if !(seconds > 0.0 && seconds.is_finite()) || Self::duration(&self.phases) / seconds > MAX_STEPS {
            return Err(ConfigError::new("tick", seconds, "a finite number of seconds above zero, at most 10^7 steps"));
        }
        Ok(Self { tick: seconds, ..self })
    }

    /// The same simulation with credit-based flow control between the source and the server
    /// (backpressure), instead of an unbounded buffer: `buffer` at least 1, `delay` a finite
    /// number of seconds at least 0. Run it with [`FixedRate`](super::FixedRate) of 1 for
    /// backpressure alone. A controller then sees the operator's queue length, and the delay an
    /// item arriving now would wait before its service, at the source and in the operator.
    ///
    /// ```
    /// use synopses::shedding::{Credits, FixedRate, Phase, Simulation};
    ///
    /// let sim = Simulation::new(vec![Phase { duration: 2.0, rate: 3000.0 }], 0.001, 1)?;
    /// // A sensor that holds 100 items: the burst's excess is lost at the source.
    /// let sensor = Credits { buffer: 16, delay: 0.0, source_buffer: Some(100) };
    /// let report = sim.clone().with_credits(sensor)?.run(FixedRate::new(1.0)?);
    /// assert!(report.lost > 3_000 && report.max_upstream <= 100);
    /// assert!(sim.with_credits(Credits { buffer: 0, ..sensor }).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_credits(self, credits: Credits) -> Result<Self, ConfigError> {
        if credits.buffer == 0 {
            return Err(ConfigError::new("buffer", credits.buffer, "at least 1 slot"));
        }
        if !(credits.delay >= 0.0 && credits.delay.is_finite()) {
            return Err(ConfigError::new("delay", credits.delay, "a finite number of seconds ≥ 0"));
        }
        Ok(Self { credits: Some(credits), ..self })
    }

    /// The seconds all phases last.
    fn duration(phases: &[Phase]) -> f64 {
        phases.iter().map(|p| p.duration).sum()
    }

    /// Runs the simulation with `controller` setting the keep probability (a
    /// [`FixedRate`](super::FixedRate) of 1 runs it without shedding). The same simulation
    /// and controller give the same report.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, Phase, Simulation};
    ///
    /// let sim = Simulation::new(vec![Phase { duration: 1.0, rate: 100.0 }], 0.001, 3)?.with_tick(0.1)?;
    /// let report = sim.run(FixedRate::new(1.0)?);
    /// assert_eq!(report.offered, report.kept);
    /// assert_eq!(report.series.len(), 10);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn run<C: RateController>(&self, controller: C) -> Report {
        let server = Server::new(self.cost_per_item, self.credits);
        let mut shedder = LoadShedder::new(server, RandomDrop::new(self.seed ^ 0x5EED), controller);
        let mut arrivals = Stream::new(self.seed, 0);
        let mut series = Vec::new();
        let (mut now, mut next_tick, mut phase_end) = (0.0, self.tick, 0.0);
        let (mut offered_at_tick, mut kept_at_tick, mut served_at_tick) = (0, 0, 0);
        let mut take_step = |shedder: &mut LoadShedder<Server, RandomDrop, C, WithWeights>, at: f64| {
            let (queue_len, upstream_len) = shedder.inner_mut().state_at(at);
            let queue_delay = (shedder.inner().free_at - at).max(0.0);
            let stats = shedder.stats();
            // A load the controller cannot act on (a tick so short, or a phase so fast, that
            // the rate is no float) is refused: the controller keeps its keep probability,
            // and the items offered count toward the next step.
            let _refused = shedder.control(Load {
                offered: 0,
                elapsed: self.tick,
                queue_len,
                cost_per_item: self.cost_per_item,
                queue_delay,
            });
            let server = shedder.inner();
            series.push(Snapshot {
                time: at,
                queue_len,
                upstream_len,
                keep_probability: shedder.keep_probability(),
                offered_rate: (stats.offered - offered_at_tick) as f64 / self.tick,
                kept_rate: (stats.kept - kept_at_tick) as f64 / self.tick,
                served_rate: (server.served - served_at_tick) as f64 / self.tick,
                offered_total: stats.offered,
                counted: server.counted,
            });
            offered_at_tick = stats.offered;
            kept_at_tick = stats.kept;
            served_at_tick = server.served;
        };
        for phase in &self.phases {
            phase_end += phase.duration;
            loop {
                let gap = if phase.rate > 0.0 { arrivals.exponential() / phase.rate } else { f64::INFINITY };
                // A gap below the clock's precision still moves it by one step, so a very high
                // rate neither stalls the clock nor loses the rest of its phase.
                let arrival = (now + gap).max(now.next_up());
                let until = arrival.min(phase_end);
                while next_tick <= until {
                    take_step(&mut shedder, next_tick);
                    next_tick += self.tick;
                }
                if arrival > phase_end {
                    // Poisson arrivals have no memory: the next phase starts afresh here.
                    now = phase_end.max(now);
                    break;
                }
                now = arrival;
                shedder.observe(arrival);
            }
        }
        let stats = shedder.stats();
        let server = shedder.into_inner();
        let mut latencies = server.latencies;
        latencies.sort_unstable_by(f64::total_cmp);
        let quantile = |q: f64| {
            let at = ((latencies.len() as f64 * q).ceil() as usize).saturating_sub(1);
            latencies.get(at).copied().unwrap_or(0.0)
        };
        Report {
            offered: stats.offered,
            kept: stats.kept - server.lost,
            lost: server.lost,
            max_queue: server.max_queue,
            max_upstream: server.max_upstream,
            latency_p50: quantile(0.5),
            latency_p99: quantile(0.99),
            latency_max: latencies.last().copied().unwrap_or(0.0),
            series,
        }
    }
}
