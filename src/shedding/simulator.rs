//! A virtual-time overload simulator: arrivals, a shedder, a queue and a server. The teaching
//! text is in the [family docs](super).

use std::collections::VecDeque;

use super::controller::{Load, RateController};
use super::policy::RandomDrop;
use super::shedder::{ItemsOnly, LoadShedder};
use crate::core::random::Stream;
use crate::core::{ConfigError, Operator};

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
pub struct Snapshot {
    /// Virtual seconds since the start.
    pub time: f64,
    /// Items in the system (waiting or in service).
    pub queue_len: u64,
    /// The keep probability set at this step.
    pub keep_probability: f64,
    /// Items offered per second over the step.
    pub offered_rate: f64,
    /// Items kept per second over the step.
    pub kept_rate: f64,
}

/// What a simulated run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Items that arrived.
    pub offered: u64,
    /// Items kept and served.
    pub kept: u64,
    /// The most items ever in the system.
    pub max_queue: u64,
    /// Latency (waiting plus service, seconds) of the kept items: median, 99th percentile and
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

/// A single server behind the shedder: it serves kept items first in, first out, each in
/// `cost` seconds. The items are their arrival times.
struct Server {
    cost: f64,
    /// When the server finishes what it has.
    free_at: f64,
    /// Completion times of the items in the system, oldest first.
    in_system: VecDeque<f64>,
    latencies: Vec<f64>,
    max_queue: u64,
}

impl Server {
    /// Items still in the system at `now`.
    fn queue_at(&mut self, now: f64) -> u64 {
        while self.in_system.front().is_some_and(|&done| done <= now) {
            self.in_system.pop_front();
        }
        self.in_system.len() as u64
    }
}

impl Operator<f64> for Server {
    fn observe(&mut self, arrival: f64) {
        let start = self.free_at.max(arrival);
        // Saturating: a cost of 10^308 s an item runs the server's clock past the floats.
        self.free_at = (start + self.cost).min(f64::MAX);
        self.in_system.push_back(self.free_at);
        self.latencies.push(self.free_at - arrival);
        self.max_queue = self.max_queue.max(self.queue_at(arrival));
    }
}

/// A virtual-time overload simulator for tests, examples and teaching: Poisson arrivals in
/// phases, a [`LoadShedder`] with a random drop policy and the controller under test, and a
/// single server that takes `cost_per_item` seconds per item (a capacity of
/// `1 / cost_per_item` items per second), first in, first out. The controller takes a step
/// every tick (10 ms unless [`with_tick`](Self::with_tick) sets another), seeing the items
/// offered, the queue and the waiting time.
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
        Ok(Self { phases, cost_per_item, tick, seed })
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
        let server = Server {
            cost: self.cost_per_item,
            free_at: 0.0,
            in_system: VecDeque::new(),
            latencies: Vec::new(),
            max_queue: 0,
        };
        let mut shedder = LoadShedder::unweighted(server, RandomDrop::new(self.seed ^ 0x5EED), controller);
        let mut arrivals = Stream::new(self.seed, 0);
        let mut series = Vec::new();
        let (mut now, mut next_tick, mut phase_end) = (0.0, self.tick, 0.0);
        let (mut offered_at_tick, mut kept_at_tick) = (0, 0);
        let mut take_step = |shedder: &mut LoadShedder<Server, RandomDrop, C, ItemsOnly>, at: f64| {
            let queue_len = shedder.inner_mut().queue_at(at);
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
            series.push(Snapshot {
                time: at,
                queue_len,
                keep_probability: shedder.keep_probability(),
                offered_rate: (stats.offered - offered_at_tick) as f64 / self.tick,
                kept_rate: (stats.kept - kept_at_tick) as f64 / self.tick,
            });
            offered_at_tick = stats.offered;
            kept_at_tick = stats.kept;
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
            kept: stats.kept,
            max_queue: server.max_queue,
            latency_p50: quantile(0.5),
            latency_p99: quantile(0.99),
            latency_max: latencies.last().copied().unwrap_or(0.0),
            series,
        }
    }
}
