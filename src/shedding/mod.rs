//! Load shedding: drop part of an overloaded stream on purpose, and keep the answers honest.
//!
//! A stream system whose input outruns its processing has two ways out. It can slow the
//! input down (*backpressure*: buffers fill, and senders block or buffer in turn), which is
//! right when every item matters and the source can wait. Or it can *shed load*: drop items
//! before they cost anything, which is right when the source cannot wait (sensors, network
//! taps, clicks) and an approximate answer now beats an exact one too late. Dropping silently
//! biases every count and sum; this family drops so that the answers stay unbiased, with a
//! stated error.
//!
//! | piece | what it does |
//! |---|---|
//! | [`LoadShedder`] | wraps any operator; keeps a fraction `p` of the items and forwards each, with its weight ([`new`](LoadShedder::new)) or alone to a sketch ([`unweighted`](LoadShedder::unweighted)) |
//! | [`RandomDrop`] | keeps each item with probability `p`, weight `1/p`; about `min(p, 1 − p)` random numbers per item |
//! | [`KeyHashDrop`] | keeps the items whose key hashes below `p`: all or none of each key, weight `1/p` |
//! | [`SemanticDrop`] | keeps the items of highest utility (a function you give), weight 1 |
//! | [`FixedRate`], [`Headroom`], [`PiController`] | set `p`: fixed; from the load and the capacity (Aurora); from the queueing delay |
//! | [`HorvitzThompson`] | estimates count, sum and mean from the kept items and their weights, with variances |
//! | [`Simulation`] | a virtual-time queue with the shedder in front, behind an unbounded buffer or credit-based flow control ([`Credits`]), to see overload, backpressure and shedding side by side |
//! | [`QueryNetwork`], [`DropPlan`] | Aurora's plan for a network of queries: its load `Load(N(I))`, where to drop and how much |
//!
//! # Where and how much to shed
//!
//! Shed as early as possible: an item dropped at the entrance costs nothing downstream.
//! How much: Aurora's answer (Tatbul et al., 2003) is to keep the load under a *headroom*
//! fraction `H` of the capacity `C`. With an input rate `λ` and a cost of `c` seconds per item,
//! the work offered per second is `λ·c`, and keeping a fraction
//!
//! ```text
//!   p = min(1, (H·C − q·c/T) / (λ·c))
//! ```
//!
//! holds the kept load at `H·C` while draining a backlog of `q` items in `T` seconds
//! ([`Headroom`]). The queue behind the shedder then behaves as one at utilization `H`: for
//! Poisson arrivals and a fixed cost (an M/D/1 queue), the chance that `n` or more items wait
//! falls as `e^(−θn)` with `θ = H(e^θ − 1)`, about `e^(−0.21n)` at `H = 0.9` (the exact
//! M/D/1 tail is about `1.15·e^(−θn)` there; `e^(−θ(n−1))` bounds it), so the queue and the
//! latency stay bounded however large the burst. The controller even smooths the stream it
//! lets through, and the measured tail falls faster than M/D/1 beyond a few items
//! (`notebooks/sampling.ipynb`). Without shedding, a burst at rate
//! `λ > C` grows the queue by `λ − C` items every second it lasts (`tests/accuracy.rs` and
//! `examples/overload.rs` measure both). A [`PiController`] instead steers the queueing delay
//! to a target, needing no model of costs, at the price of slower reactions.
//!
//! # Shedding over a query network
//!
//! Aurora sheds over a whole network of continuous queries, not one operator. In the
//! course's notation: inputs `I` at known rates, boxes with a cost `c` (seconds of work per
//! item) and a selectivity `s` (items out per item in), a capacity `C` and a headroom `H`.
//! The rate reaching a box is its input's rate times the selectivities above it, and the
//! network's load is `Load(N(I)) = Σ r_j·c_j` over its boxes; the system is overloaded when
//! `Load(N(I)) > H·C` ([`QueryNetwork::load`]).
//!
//! *Where* to drop: as early as possible, but a drop before a split thins every query that
//! shares it, while a drop after the split thins one. So the candidate locations are the first
//! arc of every branch, from an input or a split; further down a branch a drop loses the same
//! query and saves less. *How much*: each location has a loss/gain ratio, the utility lost per
//! second of work saved by dropping a little more there (`Σ u_q·k_q` over the queries below it,
//! over the work `r·g` its arc carries, `g` the seconds of work an item causes below it).
//! [`QueryNetwork::plan`] deepens the drop at the lowest ratio first, recomputing the ratios
//! after each, until the load is `H·C`: with a loss linear in the fraction dropped, that is a
//! fractional knapsack, solved exactly by the greedy when the locations are independent (a
//! star; the tests check it against the knapsack's solution). A linear loss first gives up the
//! query with the least utility per second of work, down to the least keep fraction
//! ([`MIN_KEEP_PROBABILITY`]) if need be; Aurora's QoS graphs, concave in the fraction dropped,
//! spread the drops more.
//!
//! The single-operator controller ([`Headroom`]) sees the network as one box of cost
//! `Load(N(I)) / λ` per input item and drops the same fraction at every input
//! ([`QueryNetwork::plan_at_inputs`]): the same load, usually more utility lost, because it
//! thins the cheap queries as much as the dear ones (`examples/aurora.rs`).
//!
//! # Backpressure against shedding
//!
//! Credit-based flow control (Flink's, after ATM networks') gives the operator's input buffer
//! `B` slots, one credit each; a sender sends only with a credit, so under overload the items
//! wait upstream. That bounds the operator's memory by `B`. With credits that return at once
//! and a source that can hold any backlog (a durable log), it changes nothing else: a first
//! in, first out server that never idles finishes every item at the same time behind `B` slots
//! as behind an unbounded buffer, so the latency still grows by `(λ − C)/C` seconds per second
//! of a burst, and the backlog is the source's ([`Simulation::with_credits`]). Credits that
//! take `d` seconds to return cap the throughput at `min(1/c, B/(c + d))` items a second: the
//! buffer must cover the credits in flight, `B ≥ d/c + 1`. A source that cannot wait loses what it cannot hold, the burst's excess,
//! by arrival time: the answer misses that stretch of the stream, and nothing estimates it.
//! Shedding keeps the latency bounded and the answer current and unbiased, at the error of the
//! sample; buffering and backpressure give the exact answer, late
//! ([`Snapshot::count_error`], `examples/overload.rs`).
//!
//! # Random drops keep sums unbiased
//!
//! An item kept with probability `p_i` and counted with weight `w_i = 1/p_i` contributes, on
//! average, exactly itself; so the Horvitz–Thompson estimates `Σ w_i` and `Σ w_i·y_i` over the
//! kept items are unbiased estimates of the count and sum of *all* items, even while `p`
//! changes, because each item carries the `p` in force when it arrived. With independent
//! choices, their variances are estimated without bias by `Σ w_i(w_i − 1)` and
//! `Σ w_i(w_i − 1)·y_i²`. Over `n` items kept at a fixed `p`, whose values have coefficient
//! of variation `CV`, the sum has a relative standard error of `√((1 − p)/(p·n))·√(1 + CV²)`
//! (the count's is the same with `CV = 0`), and the mean, a ratio, of
//! `√((1 − p)/(p·n))·CV`.
//!
//! # Why a row sample cannot count distinct keys, and a key-hash sample can
//!
//! Drop rows at random, and a key seen 100 times survives almost surely while a key seen once
//! survives with probability `p`: the number of distinct keys kept depends on the unknown
//! frequencies, and no weighting repairs it (the distinct count is not a sum over rows).
//! Keep instead every row whose key *hashes* below `p` ([`KeyHashDrop`]), and each distinct
//! key survives, with all its rows, with probability exactly `p`: a distinct-count sketch
//! behind it estimates `p` times the number of distinct keys, so its estimate divided by `p`
//! is unbiased, with the sketch's error plus the binomial error `√((1 − p)/(p·D))` of keeping
//! `p·D` of `D` keys. `tests/accuracy.rs` shows both, HyperLogLog behind each policy.
//!
//! # A sketch behind a shedder
//!
//! A sketch takes plain items, so [`LoadShedder::unweighted`] hands it the kept items without
//! their weights, and the sketch answers about the kept items only: a distinct count behind a
//! key-hash policy counts the kept keys (divide by `p`), a Count-Min behind random drops
//! counts about `p` times each frequency (divide by `p`), a Bloom filter behind either misses
//! dropped keys. Scaling by `1/p` is right only while `p` stays fixed; the table at
//! [`LoadShedder::unweighted`] lists each case. Estimates that stay unbiased while a
//! controller moves `p` need the weights: [`LoadShedder::new`] with [`HorvitzThompson`].
//!
//! # Random versus semantic drops
//!
//! Random and key-hash drops treat every item alike and support unbiased estimates of totals.
//! A semantic drop ([`SemanticDrop`]) keeps the items that matter most (the largest
//! transactions, the alerts) and drops the rest: the answers about the kept items are exact,
//! and totals over all items are not estimated at all. Use it when the question is about the
//! important items, not the whole stream.
//!
//! # Merging and parallel partitions
//!
//! A [`LoadShedder`] is mergeable when its inner operator is: the inner states merge and the
//! counts add, while each partition keeps its own controller (its own load) and, through
//! [`empty_part`](crate::core::Mergeable::empty_part), its own random stream. The
//! [`HorvitzThompson`] sums merge exactly.
//!
//! # Hostile loads and extreme values
//!
//! A controller is only as good as its readings. [`Load::validate`] names what a controller
//! cannot act on (a time, cost or delay that is not a finite number at least 0, or an
//! elapsed time so short that the input rate is infinite); the controllers ignore such a
//! step, [`LoadShedder::control`] refuses it with an error (the items offered count toward
//! the next step), and [`Headroom`] restarts its average at a reading more than 1024 times
//! off it, so one freak reading that far off sways one step and the next normal one restores it. The
//! counts of offered and kept items saturate at `u64::MAX`; [`HorvitzThompson`] keeps its
//! sums in units scaled by powers of two once an item passes `2^200`, so that no sum
//! overflows and means stay means, and answers saturate at `±f64::MAX`; values that are not finite are counted apart, never summed.
//!
//! # Adversaries
//!
//! A [`KeyHashDrop`] keeps a key when its hash, under the policy's seed, falls below `p`:
//! with the public default seed, an adversary can compute keys that are always kept (at
//! `p = 0.01`, every one of them) or always dropped. A [`RandomDrop`]'s choices follow its
//! seed: knowing it, and the order of the stream, tells which items will be kept. On an
//! adversary's stream use a secret seed ([`KeyHashDrop::with_seed`], [`RandomDrop::new`]).
//!
//! # When not to use it
//!
//! * Every item matters (billing, exactly-once pipelines): use backpressure and capacity.
//! * The answer is an extreme (a maximum, a rare event): a sample misses it.
//! * Overload is short and memory is plentiful: a buffer absorbs it without error.
//!
//! # References
//!
//! * N. Tatbul, U. Çetintemel, S. Zdonik, M. Cherniack, M. Stonebraker. *Load shedding in a
//!   data stream manager.* VLDB 2003.
//! * B. Babcock, M. Datar, R. Motwani. *Load shedding for aggregation queries over data
//!   streams.* ICDE 2004.
//! * D. G. Horvitz, D. J. Thompson. *A generalization of sampling without replacement from a
//!   finite universe.* JASA 47(260), 1952.
//! * Y.-C. Tu, S. Liu, S. Prabhakar, B. Yao. *Load shedding in stream databases: a
//!   control-based approach.* VLDB 2006 (feedback control of the delay).
//! * H. T. Kung, T. Blackwell, A. Chapman. *Credit-based flow control for ATM networks.*
//!   SIGCOMM 1994.

mod controller;
mod network;
mod policy;
mod shedder;
mod simulator;

pub use controller::{FixedRate, Headroom, Load, MIN_KEEP_PROBABILITY, PiController, PiGains, RateController};
pub use network::{DropPlan, Node, QueryNetwork};
pub use policy::{DropPolicy, KeyHashDrop, PartPolicy, RandomDrop, SemanticDrop};
pub use shedder::{Forward, HorvitzThompson, ItemsOnly, LoadShedder, ShedStats, Value, WithWeights};
pub use simulator::{Credits, Phase, Report, Simulation, Snapshot};
