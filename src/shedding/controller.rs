//! Rate controllers: how much a load shedder keeps. The teaching text is in the
//! [family docs](super).

use crate::core::ConfigError;

/// The least keep probability a controller sets: a kept item then stands for at most 10^4
/// offered ones. Never 0, which would leave nothing to estimate the dropped items from.
pub const MIN_KEEP_PROBABILITY: f64 = 1e-4;

/// What a rate controller is told at each control step.
///
/// ```
/// use synopses::shedding::Load;
///
/// // 3000 items in the last 10 ms, 12 waiting, each costing 1 ms of work.
/// let load = Load { offered: 30, elapsed: 0.01, queue_len: 12, cost_per_item: 0.001, queue_delay: 0.012 };
/// assert_eq!(load.input_rate(), 3000.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Items offered since the previous step.
    pub offered: u64,
    /// Seconds since the previous step.
    pub elapsed: f64,
    /// Items waiting to be processed, behind the shedder.
    pub queue_len: u64,
    /// Seconds of processing one kept item costs.
    pub cost_per_item: f64,
    /// Seconds an item arriving now would wait before its service starts (the work queued
    /// ahead of it): the queueing delay a [`PiController`] steers.
    pub queue_delay: f64,
}

impl Load {
    /// Items offered per second over the step: `offered / elapsed` (0 for an empty step).
    ///
    /// ```
    /// # use synopses::shedding::Load;
    /// let idle = Load { offered: 0, elapsed: 0.0, queue_len: 0, cost_per_item: 0.001, queue_delay: 0.0 };
    /// assert_eq!(idle.input_rate(), 0.0);
    /// ```
    #[must_use]
    pub fn input_rate(&self) -> f64 {
        if self.elapsed > 0.0 { self.offered as f64 / self.elapsed } else { 0.0 }
    }

    /// Whether a controller can act on this load: `elapsed`, `cost_per_item` and
    /// `queue_delay` finite numbers at least 0, and an elapsed time long enough that the
    /// input rate is finite (a clock reading of 10^-320 s, or of 0 s with items offered,
    /// would make it infinite; 0 s with none offered is an empty step). The error
    /// names the first field that fails. The controllers of this crate ignore a step whose
    /// load fails (one bad reading cannot poison them), and
    /// [`LoadShedder::control`](super::LoadShedder::control) refuses it.
    ///
    /// ```
    /// # use synopses::shedding::Load;
    /// let ok = Load { offered: 10, elapsed: 0.01, queue_len: 3, cost_per_item: 0.001, queue_delay: 0.003 };
    /// assert!(ok.validate().is_ok());
    /// let instant = Load { elapsed: 1e-320, ..ok };
    /// assert_eq!(instant.validate().unwrap_err().parameter(), "elapsed");
    /// assert_eq!(Load { cost_per_item: -1.0, ..ok }.validate().unwrap_err().parameter(), "cost_per_item");
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        let at_least_zero = |x: f64| x >= 0.0 && x.is_finite();
        // (Items offered in no time at all are an infinite rate too.)
        let instant = self.elapsed == 0.0 && self.offered > 0;
        if !at_least_zero(self.elapsed) || !self.input_rate().is_finite() || instant {
            return Err(ConfigError::new(
                "elapsed",
                self.elapsed,
                "a finite number of seconds ≥ 0, long enough for a finite input rate",
            ));
        }
        if !at_least_zero(self.cost_per_item) {
            return Err(ConfigError::new("cost_per_item", self.cost_per_item, "a finite number of seconds ≥ 0"));
        }
        if !at_least_zero(self.queue_delay) {
            return Err(ConfigError::new("queue_delay", self.queue_delay, "a finite number of seconds ≥ 0"));
        }
        Ok(())
    }
}

/// Sets the keep probability of a [`LoadShedder`](super::LoadShedder) from the load it sees.
///
/// ```
/// use synopses::shedding::{FixedRate, Load, RateController};
///
/// let mut fixed = FixedRate::new(0.3)?;
/// fixed.update(&Load { offered: 1000, elapsed: 1.0, queue_len: 0, cost_per_item: 0.01, queue_delay: 0.0 });
/// assert_eq!(fixed.keep_probability(), 0.3);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub trait RateController {
    /// The keep probability in force, in `[MIN_KEEP_PROBABILITY, 1]`.
    #[must_use]
    fn keep_probability(&self) -> f64;

    /// Takes one control step. A controller must stay usable whatever the load: the
    /// controllers of this crate ignore a load that fails [`Load::validate`].
    fn update(&mut self, load: &Load);
}

/// Checks a probability given by the user: in `(0, 1]`.
pub(super) fn probability(parameter: &'static str, value: f64) -> Result<f64, ConfigError> {
    if value > 0.0 && value <= 1.0 { Ok(value) } else { Err(ConfigError::new(parameter, value, "a number in (0, 1]")) }
}

/// Checks a positive, finite quantity given by the user.
pub(super) fn positive(parameter: &'static str, value: f64) -> Result<f64, ConfigError> {
    if value > 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(ConfigError::new(parameter, value, "a finite number above zero"))
    }
}

/// A keep probability that never changes.
///
/// ```
/// use synopses::shedding::{FixedRate, RateController};
///
/// assert_eq!(FixedRate::new(1.0)?.keep_probability(), 1.0);
/// assert!(FixedRate::new(0.0).is_err() && FixedRate::new(1.5).is_err());
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedRate {
    keep_probability: f64,
}

impl FixedRate {
    /// Keeps a fraction `keep_probability` (in `(0, 1]`) of the items.
    ///
    /// ```
    /// # use synopses::shedding::FixedRate;
    /// assert!(FixedRate::new(f64::NAN).is_err());
    /// ```
    pub fn new(keep_probability: f64) -> Result<Self, ConfigError> {
        Ok(Self { keep_probability: probability("keep_probability", keep_probability)? })
    }
}

impl RateController for FixedRate {
    fn keep_probability(&self) -> f64 {
        self.keep_probability
    }

    fn update(&mut self, _: &Load) {}
}

/// The Aurora headroom controller (Tatbul et al., VLDB 2003): keeps the processing load under
/// a fraction `H` (the headroom) of the capacity `C`, and drains a queue that built up.
///
/// At each step it smooths the input rate `λ` (an exponentially weighted average over the
/// steps), computes the work demanded per second `λ·c` for the per-item cost `c`, and the
/// budget `H·C − q·c/T`: the headroom less what it takes to drain the `q` waiting items in
/// `T` seconds. The keep probability is `budget / (λ·c)`, clamped to
/// `[MIN_KEEP_PROBABILITY, 1]`. At steady overload the kept load is `H·C`, so the queue
/// behind the shedder behaves as one at utilization `H`.
///
/// A step whose load fails [`Load::validate`] is ignored. A rate more than 1024 times above
/// or below the average (both above zero) restarts the average there: a change that large is
/// a new regime, not noise, and a freak reading then sways one step instead of the hundreds
/// an exponential average takes to forget a factor of `10^30`. A demand or backlog too large
/// for a float keeps the least.
///
/// ```
/// use synopses::shedding::{Headroom, Load, RateController};
///
/// // One core (C = 1 s of work per second, the default), 10 % headroom; items cost 1 ms each.
/// let mut c = Headroom::new(0.9)?;
/// c.update(&Load { offered: 3000, elapsed: 1.0, queue_len: 0, cost_per_item: 0.001, queue_delay: 0.0 });
/// assert!((c.keep_probability() - 0.3).abs() < 1e-9); // 3000 items/s × 1 ms = 3 s/s; keep 0.9/3
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headroom {
    capacity: f64,
    headroom: f64,
    drain_time: f64,
    smoothing: f64,
    rate: Option<f64>,
    keep_probability: f64,
}

impl Headroom {
    /// A controller keeping the load under a fraction `headroom` in `(0, 1]` of the capacity,
    /// for a capacity of 1 second of work per second (one core), draining a queue in 1 second,
    /// smoothing the input rate with weight 0.5 per step.
    ///
    /// ```
    /// # use synopses::shedding::Headroom;
    /// assert!(Headroom::new(0.9).is_ok());
    /// assert!(Headroom::new(0.0).is_err() && Headroom::new(1.5).is_err());
    /// ```
    pub fn new(headroom: f64) -> Result<Self, ConfigError> {
        Ok(Self {
            capacity: 1.0,
            headroom: probability("headroom", headroom)?,
            drain_time: 1.0,
            smoothing: 0.5,
            rate: None,
            keep_probability: 1.0,
        })
    }

    /// The same controller for a capacity of `seconds_per_second` seconds of work per second
    /// (finite, above zero): 4 for four cores, 0.5 for half of one.
    ///
    /// ```
    /// use synopses::shedding::{Headroom, Load, RateController};
    ///
    /// let mut c = Headroom::new(0.9)?.with_capacity(2.0)?;
    /// c.update(&Load { offered: 3000, elapsed: 1.0, queue_len: 0, cost_per_item: 0.001, queue_delay: 0.0 });
    /// assert!((c.keep_probability() - 0.6).abs() < 1e-9); // 1.8 s of the 3 s offered each second
    /// assert!(Headroom::new(0.9)?.with_capacity(0.0).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_capacity(self, seconds_per_second: f64) -> Result<Self, ConfigError> {
        Ok(Self { capacity: positive("capacity", seconds_per_second)?, ..self })
    }

    /// The same controller, draining a queue in `seconds` (finite, above zero) instead.
    ///
    /// ```
    /// # use synopses::shedding::Headroom;
    /// assert!(Headroom::new(0.9)?.with_drain_time(0.1).is_ok());
    /// assert!(Headroom::new(0.9)?.with_drain_time(0.0).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_drain_time(self, seconds: f64) -> Result<Self, ConfigError> {
        Ok(Self { drain_time: positive("drain_time", seconds)?, ..self })
    }

    /// The same controller, weighting each step's rate by `weight` in `(0, 1]` in its
    /// average (1: no smoothing).
    ///
    /// ```
    /// # use synopses::shedding::Headroom;
    /// assert!(Headroom::new(0.9)?.with_smoothing(1.0).is_ok());
    /// assert!(Headroom::new(0.9)?.with_smoothing(2.0).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_smoothing(self, weight: f64) -> Result<Self, ConfigError> {
        Ok(Self { smoothing: probability("smoothing", weight)?, ..self })
    }

    /// The smoothed input rate, items per second (0 before the first step).
    ///
    /// ```
    /// use synopses::shedding::{Headroom, Load, RateController};
    ///
    /// let mut c = Headroom::new(0.9)?;
    /// c.update(&Load { offered: 50, elapsed: 0.1, queue_len: 0, cost_per_item: 0.001, queue_delay: 0.0 });
    /// assert_eq!(c.input_rate(), 500.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn input_rate(&self) -> f64 {
        self.rate.unwrap_or(0.0)
    }
}

/// A reading more than this factor above or below the smoothed rate (both above zero) starts
/// the average afresh instead of entering it: a real change of that size is a new regime,
/// and a freak reading (a clock that moved by a nanosecond) then sways one step, not the many
/// an exponential average would take to forget it.
const LEVEL_SHIFT: f64 = 1024.0;

impl RateController for Headroom {
    fn keep_probability(&self) -> f64 {
        self.keep_probability
    }

    fn update(&mut self, load: &Load) {
        if load.validate().is_err() || load.elapsed == 0.0 {
            return;
        }
        let observed = load.input_rate();
        let rate = match self.rate {
            Some(r) if r > 0.0 && observed > 0.0 && (observed > r * LEVEL_SHIFT || observed * LEVEL_SHIFT < r) => {
                observed
            }
            Some(r) => r + self.smoothing * (observed - r),
            None => observed,
        };
        self.rate = Some(rate);
        let demand = rate * load.cost_per_item;
        let budget = self.headroom * self.capacity - load.queue_len as f64 * load.cost_per_item / self.drain_time;
        let keep = if demand > 0.0 { budget / demand } else { 1.0 };
        // A demand or backlog beyond the floats (`−∞ / ∞`) is an overload beyond measure.
        self.keep_probability =
            if keep.is_nan() { MIN_KEEP_PROBABILITY } else { keep.clamp(MIN_KEEP_PROBABILITY, 1.0) };
    }
}

/// A proportional–integral controller on the queueing delay: it raises the keep probability
/// while the delay is below the target and lowers it while above, in the velocity form
/// `p ← p + K_p·(e − e_prev) + K_i·e·Δt` with the relative error `e = (target − delay)/target`,
/// clamped to `[MIN_KEEP_PROBABILITY, 1]` (which also stops the integral from winding up).
///
/// It needs no model of the cost or the capacity, only the delay it controls; it reacts
/// more slowly than [`Headroom`], and its gains trade speed against overshoot.
///
/// ```
/// use synopses::shedding::{Load, PiController, PiGains, RateController};
///
/// let mut c = PiController::new(0.05, PiGains { proportional: 0.2, integral: 2.0 })?; // target 50 ms
/// for _ in 0..20 {
///     // The delay stays at 500 ms: the controller backs off.
///     c.update(&Load { offered: 100, elapsed: 0.1, queue_len: 500, cost_per_item: 0.001, queue_delay: 0.5 });
/// }
/// assert!(c.keep_probability() < 0.1);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PiController {
    target_delay: f64,
    proportional: f64,
    integral: f64,
    previous_error: f64,
    keep_probability: f64,
}

/// The gains of a [`PiController`]: how far one step moves the keep probability for a
/// change in the relative error (`K_p`), and per second of a standing error (`K_i`).
/// Larger gains react faster and overshoot more.
///
/// ```
/// use synopses::shedding::{PiController, PiGains};
///
/// let gains = PiGains { proportional: 0.3, integral: 5.0 };
/// assert!(PiController::new(0.02, gains).is_ok());
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PiGains {
    /// `K_p`: the step for a change of the relative error by 1.
    pub proportional: f64,
    /// `K_i`, per second: the step per second of a relative error of 1.
    pub integral: f64,
}

impl PiController {
    /// A controller holding the queueing delay at `target_delay` seconds with `gains`; the
    /// delay and both gains finite and above zero.
    ///
    /// ```
    /// # use synopses::shedding::{PiController, PiGains};
    /// let gains = PiGains { proportional: 0.2, integral: 2.0 };
    /// assert!(PiController::new(0.0, gains).is_err());
    /// assert!(PiController::new(0.05, PiGains { integral: -1.0, ..gains }).is_err());
    /// ```
    pub fn new(target_delay: f64, gains: PiGains) -> Result<Self, ConfigError> {
        Ok(Self {
            target_delay: positive("target_delay", target_delay)?,
            proportional: positive("proportional", gains.proportional)?,
            integral: positive("integral", gains.integral)?,
            previous_error: 0.0,
            keep_probability: 1.0,
        })
    }
}

impl RateController for PiController {
    fn keep_probability(&self) -> f64 {
        self.keep_probability
    }

    fn update(&mut self, load: &Load) {
        if load.validate().is_err() || load.elapsed == 0.0 {
            return;
        }
        // Saturate the error so that a huge delay does not swing p in one step.
        let error = ((self.target_delay - load.queue_delay) / self.target_delay).clamp(-1.0, 1.0);
        let step = self.proportional * (error - self.previous_error) + self.integral * error * load.elapsed;
        self.previous_error = error;
        if step.is_finite() {
            self.keep_probability = (self.keep_probability + step).clamp(MIN_KEEP_PROBABILITY, 1.0);
        }
    }
}
