//! Load shedding over a query network, as Aurora plans it: where to drop and how much. The
//! teaching text is in the [family docs](super).

use std::sync::atomic::{AtomicU64, Ordering};

use super::controller::{MIN_KEEP_PROBABILITY, positive, probability};
use crate::core::ConfigError;

/// Numbers each network, so that a node or a plan of one is refused by another.
static NETWORKS: AtomicU64 = AtomicU64::new(0);

/// A node of a [`QueryNetwork`]: an input, a box (an operator) or a query's output.
///
/// ```
/// use synopses::shedding::QueryNetwork;
///
/// let mut net = QueryNetwork::new();
/// let input = net.input();
/// let filter = net.add_box(input, 0.0001, 0.5)?;
/// assert_ne!(input, filter);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    network: u64,
    index: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Input,
    Box { cost: f64, selectivity: f64 },
    Output { utility: f64 },
}

#[derive(Debug, Clone, PartialEq)]
struct Vertex {
    kind: Kind,
    downstream: Vec<usize>,
    upstream: Option<usize>,
}

/// A network of continuous queries in the course's formulation of Aurora's load shedding:
/// inputs arriving at known rates, boxes (operators) that each cost `c` seconds of work per
/// item and pass on a fraction `s` of their items (their *selectivity*), and the queries'
/// outputs, each with a utility (how much its answer matters). An output of one node may feed
/// several (a *split*: queries sharing their first boxes); every node has one upstream, so the
/// network is a forest.
///
/// Its load `Load(N(I))` (seconds of work per second, [`load`](Self::load)) is
/// `Σ r_j·c_j` over the boxes, `r_j` the rate reaching box `j`: its input's rate times the
/// selectivities of the boxes above it. The system is overloaded when the load exceeds the
/// share `H` of the capacity `C` it may use; [`plan`](Self::plan) then places drops on the arcs
/// where Aurora places them (the first arc of every branch, from an input or a split: a drop
/// further down the same branch loses the same queries and saves less), and chooses how much
/// each keeps, least utility lost per second of work saved first, until the load is `H·C`.
///
/// ```
/// use synopses::shedding::QueryNetwork;
///
/// // One input at 2000 items/s; a shared filter, then two queries.
/// let mut net = QueryNetwork::new();
/// let input = net.input();
/// let filter = net.add_box(input, 0.0001, 0.5)?; // 0.1 ms an item, half pass
/// let cheap = net.add_box(filter, 0.0002, 1.0)?;
/// let dear = net.add_box(filter, 0.002, 0.1)?;
/// net.output(cheap, 1.0)?;
/// net.output(dear, 1.0)?;
/// // 2000·0.0001 + 1000·0.0002 + 1000·0.002 = 2.4 s of work a second, on one core.
/// assert!((net.load(&[2000.0])? - 2.4).abs() < 1e-12);
/// let plan = net.plan(&[2000.0], 1.0, 0.9)?;
/// assert!(plan.meets_target() && net.load_with(&[2000.0], &plan)? <= 0.9 + 1e-12);
/// assert_eq!(plan.keep(cheap), 1.0); // the cheap query is left whole...
/// assert!(plan.keep(dear) < 0.35); // ...and the dear one thinned
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct QueryNetwork {
    id: u64,
    nodes: Vec<Vertex>,
    inputs: Vec<usize>,
}

impl Default for QueryNetwork {
    fn default() -> Self {
        Self { id: NETWORKS.fetch_add(1, Ordering::Relaxed), nodes: Vec::new(), inputs: Vec::new() }
    }
}

/// Where a [`QueryNetwork`] drops items and how many: a keep fraction on the arc into each
/// node (1 where nothing is dropped). Apply it with a [`LoadShedder`](super::LoadShedder) of
/// [`FixedRate`](super::FixedRate)`(keep)` in front of each node with a drop, so that its
/// queries' estimates stay unbiased (each kept item weighs `1 / keep` per drop on its path).
///
/// ```
/// use synopses::shedding::QueryNetwork;
///
/// let mut net = QueryNetwork::new();
/// let input = net.input();
/// let count = net.add_box(input, 0.001, 1.0)?;
/// net.output(count, 1.0)?;
/// let plan = net.plan(&[3000.0], 1.0, 0.9)?;
/// assert!((plan.keep(count) - 0.3).abs() < 1e-12);
/// assert_eq!(plan.drops().count(), 1);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DropPlan {
    network: u64,
    keep: Vec<f64>,
    meets_target: bool,
}

impl DropPlan {
    /// The fraction kept on the arc into `node` (1 for a node of another network, or added
    /// after the plan was made).
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// let op = net.add_box(input, 0.001, 1.0)?;
    /// assert_eq!(net.plan(&[100.0], 1.0, 0.9)?.keep(op), 1.0); // 0.1 s/s: no overload
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn keep(&self, node: Node) -> f64 {
        if node.network != self.network {
            return 1.0;
        }
        self.keep.get(node.index).copied().unwrap_or(1.0)
    }

    /// The drops: each node with a keep fraction below 1 on its incoming arc, and that fraction.
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// let op = net.add_box(input, 0.001, 1.0)?;
    /// let plan = net.plan(&[2000.0], 1.0, 0.5)?;
    /// assert_eq!(plan.drops().collect::<Vec<_>>(), vec![(op, 0.25)]);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn drops(&self) -> impl Iterator<Item = (Node, f64)> + '_ {
        let network = self.network;
        self.keep.iter().enumerate().filter(|(_, k)| **k < 1.0).map(move |(index, k)| (Node { network, index }, *k))
    }

    /// Whether the plan brings the load under `H·C`. It cannot when even the least keep
    /// fraction, [`MIN_KEEP_PROBABILITY`], at every drop location leaves too much work.
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// net.add_box(input, 1.0, 1.0)?; // a second of work per item
    /// assert!(!net.plan(&[1e6], 1.0, 0.9)?.meets_target()); // 100 s/s even at a keep of 10^-4
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn meets_target(&self) -> bool {
        self.meets_target
    }
}

/// Relative slack when comparing a load with its target, for the rounding of the sums.
const TARGET_SLACK: f64 = 1e-12;

impl QueryNetwork {
    /// An empty network.
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// assert_eq!(QueryNetwork::new().load(&[])?, 0.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input stream; its rate is given, in the order the inputs were added, to
    /// [`load`](Self::load) and [`plan`](Self::plan).
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let (a, b) = (net.input(), net.input());
    /// net.add_box(a, 0.001, 1.0)?;
    /// net.add_box(b, 0.002, 1.0)?;
    /// assert!((net.load(&[100.0, 100.0])? - 0.3).abs() < 1e-12);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn input(&mut self) -> Node {
        self.inputs.push(self.nodes.len());
        self.push(Kind::Input, None)
    }

    /// Adds a box fed by `upstream` (an input or a box), costing `cost` seconds of work per
    /// item (finite, at least 0) and passing on `selectivity` items per item (finite, at least
    /// 0; above 1 for a box that emits several).
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// assert!(net.add_box(input, 0.001, 0.5).is_ok());
    /// assert!(net.add_box(input, -1.0, 0.5).is_err());
    /// let out = net.output(input, 1.0)?;
    /// assert!(net.add_box(out, 0.001, 0.5).is_err()); // an output feeds nothing
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn add_box(&mut self, upstream: Node, cost: f64, selectivity: f64) -> Result<Node, ConfigError> {
        let cost = non_negative("cost", cost)?;
        let selectivity = non_negative("selectivity", selectivity)?;
        let upstream = self.feeder(upstream)?;
        Ok(self.push(Kind::Box { cost, selectivity }, Some(upstream)))
    }

    /// Adds a query's output fed by `upstream`, its answer worth `utility` (finite, at least
    /// 0): the plan loses, for each query, its utility times the fraction of its items dropped.
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// assert!(net.output(input, 2.0).is_ok());
    /// assert!(net.output(input, f64::NAN).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn output(&mut self, upstream: Node, utility: f64) -> Result<Node, ConfigError> {
        let utility = non_negative("utility", utility)?;
        let upstream = self.feeder(upstream)?;
        Ok(self.push(Kind::Output { utility }, Some(upstream)))
    }

    /// `Load(N(I))`: the seconds of work per second the network needs at the input `rates`
    /// (items per second, one per input, finite and at least 0), with no drops.
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// let filter = net.add_box(input, 0.001, 0.2)?;
    /// net.add_box(filter, 0.01, 1.0)?;
    /// assert!((net.load(&[1000.0])? - 3.0).abs() < 1e-12); // 1000·0.001 + 200·0.01
    /// assert!(net.load(&[1.0, 2.0]).is_err()); // one rate per input
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn load(&self, rates: &[f64]) -> Result<f64, ConfigError> {
        self.load_with(rates, &self.no_drops())
    }

    /// The load with the drops of `plan` in place.
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// net.add_box(input, 0.001, 1.0)?;
    /// let plan = net.plan(&[4000.0], 1.0, 0.75)?;
    /// assert!((net.load_with(&[4000.0], &plan)? - 0.75).abs() < 1e-12);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn load_with(&self, rates: &[f64], plan: &DropPlan) -> Result<f64, ConfigError> {
        let arriving = self.arriving(rates, &self.keeps(plan)?)?;
        let load = self
            .nodes
            .iter()
            .zip(&arriving)
            .map(|(v, r)| match v.kind {
                Kind::Box { cost, .. } => r * cost,
                _ => 0.0,
            })
            .sum::<f64>();
        finite_load(load)
    }

    /// The share of the queries' utility the drops of `plan` keep: `Σ u_q·k_q / Σ u_q`, `k_q`
    /// the product of the keep fractions on query `q`'s path (1 with no query or no utility).
    /// A plan of another network is refused.
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// let op = net.add_box(input, 0.001, 1.0)?;
    /// net.output(op, 1.0)?;
    /// let plan = net.plan(&[2000.0], 1.0, 0.5)?;
    /// assert!((net.utility_kept(&plan)? - 0.25).abs() < 1e-12);
    /// assert!(QueryNetwork::new().utility_kept(&plan).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn utility_kept(&self, plan: &DropPlan) -> Result<f64, ConfigError> {
        let kept = self.path_keeps(&self.keeps(plan)?);
        let scale = self.utility_scale();
        let (mut total, mut worth) = (0.0, 0.0);
        for (v, k) in self.nodes.iter().zip(&kept) {
            if let Kind::Output { utility } = v.kind {
                total += utility * scale;
                worth += utility * scale * k;
            }
        }
        Ok(if total > 0.0 { worth / total } else { 1.0 })
    }

    /// The plan that drops the same fraction at every input, enough to bring the load under
    /// `H·C`: what one [`Headroom`](super::Headroom) controller in front of the whole network
    /// does, seeing it as a single operator of cost `Load(N(I)) / Σ rates` per item. `capacity`
    /// is in seconds of work per second (finite, above zero), `headroom` in `(0, 1]`.
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// let op = net.add_box(input, 0.001, 1.0)?;
    /// let plan = net.plan_at_inputs(&[3000.0], 1.0, 0.9)?;
    /// assert!((plan.keep(op) - 0.3).abs() < 1e-12);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn plan_at_inputs(&self, rates: &[f64], capacity: f64, headroom: f64) -> Result<DropPlan, ConfigError> {
        let target = positive("capacity", capacity)? * probability("headroom", headroom)?;
        let load = self.load(rates)?;
        let keep = if load > target { (target / load).max(MIN_KEEP_PROBABILITY) } else { 1.0 };
        let mut plan = self.no_drops();
        for &i in &self.inputs {
            for &d in &self.nodes[i].downstream {
                plan.keep[d] = keep;
            }
        }
        plan.meets_target = self.load_with(rates, &plan)? <= target * (1.0 + TARGET_SLACK);
        Ok(plan)
    }

    /// Aurora's plan: drops on the first arc of each branch (from an input or a split), placed
    /// greedily by their loss/gain ratio (the utility lost per second of work saved by a
    /// little more dropping there: `Σ u_q·k_q` over the queries below, over the work `r·g` the
    /// arc carries), the lowest first, each deepened until the load reaches `H·C` or its keep
    /// fraction reaches [`MIN_KEEP_PROBABILITY`]. No drop when the load is already under `H·C`.
    /// `capacity` is in seconds of work per second (finite, above zero), `headroom` in
    /// `(0, 1]`.
    ///
    /// ```
    /// # use synopses::shedding::QueryNetwork;
    /// let mut net = QueryNetwork::new();
    /// let input = net.input();
    /// let shared = net.add_box(input, 0.0005, 1.0)?;
    /// let a = net.add_box(shared, 0.001, 1.0)?;
    /// let b = net.add_box(shared, 0.001, 1.0)?;
    /// net.output(a, 3.0)?; // the more valuable query
    /// net.output(b, 1.0)?;
    /// // 0.5 + 1 + 1 = 2.5 s/s on two cores, 1.8 allowed: drop 0.7 s/s of b's 1 s/s.
    /// let plan = net.plan(&[1000.0], 2.0, 0.9)?;
    /// assert_eq!((plan.keep(shared), plan.keep(a)), (1.0, 1.0));
    /// assert!((plan.keep(b) - 0.3).abs() < 1e-12);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn plan(&self, rates: &[f64], capacity: f64, headroom: f64) -> Result<DropPlan, ConfigError> {
        let target = positive("capacity", capacity)? * probability("headroom", headroom)?;
        let mut plan = self.no_drops();
        let locations: Vec<usize> = self
            .nodes
            .iter()
            .filter(|v| v.kind == Kind::Input || v.downstream.len() > 1)
            .flat_map(|v| v.downstream.iter().copied())
            .collect();
        // Each round exhausts a location or meets the target.
        for _ in 0..=locations.len() {
            let load = self.load_with(rates, &plan)?;
            let excess = load - target;
            if excess <= target * TARGET_SLACK {
                plan.meets_target = true;
                return Ok(plan);
            }
            let work = self.work_below(&self.arriving(rates, &plan.keep)?);
            let worth = self.worth_below(&plan.keep);
            let best = locations
                .iter()
                .copied()
                .filter(|&a| plan.keep[a] > MIN_KEEP_PROBABILITY)
                .map(|a| (a, work[a], worth[a]))
                .filter(|&(_, work, _)| work > 0.0)
                .min_by(|x, y| (x.2 / x.1).total_cmp(&(y.2 / y.1)));
            let Some((arc, work, _)) = best else { break };
            // Keeping k' of the k kept now saves (1 − k'/k) of the work the arc carries.
            let keep = plan.keep[arc] * (1.0 - excess / work);
            plan.keep[arc] = keep.max(MIN_KEEP_PROBABILITY);
        }
        plan.meets_target = self.load_with(rates, &plan)? <= target * (1.0 + TARGET_SLACK);
        Ok(plan)
    }

    fn push(&mut self, kind: Kind, upstream: Option<usize>) -> Node {
        let index = self.nodes.len();
        if let Some(u) = upstream {
            self.nodes[u].downstream.push(index);
        }
        self.nodes.push(Vertex { kind, downstream: Vec::new(), upstream });
        Node { network: self.id, index }
    }

    /// `upstream`'s index, if it is a node of this network that can feed another.
    fn feeder(&self, upstream: Node) -> Result<usize, ConfigError> {
        let kind = self.nodes.get(upstream.index).filter(|_| upstream.network == self.id).map(|v| v.kind);
        match kind {
            None => Err(ConfigError::new("upstream", upstream.index, "a node of this network")),
            Some(Kind::Output { .. }) => {
                Err(ConfigError::new("upstream", upstream.index, "an input or a box, not an output"))
            }
            Some(_) => Ok(upstream.index),
        }
    }

    fn no_drops(&self) -> DropPlan {
        DropPlan { network: self.id, keep: vec![1.0; self.nodes.len()], meets_target: true }
    }

    /// The plan's keep fractions, one per node (1 for nodes added after it), if it is a plan
    /// of this network.
    fn keeps(&self, plan: &DropPlan) -> Result<Vec<f64>, ConfigError> {
        if plan.network != self.id {
            return Err(ConfigError::new("plan", plan.network, "a plan of this network"));
        }
        Ok((0..self.nodes.len()).map(|index| plan.keep.get(index).copied().unwrap_or(1.0)).collect())
    }

    /// The rate reaching each node, after the drop on its incoming arc. Nodes come after their
    /// upstream, so one pass in order computes them.
    fn arriving(&self, rates: &[f64], keep: &[f64]) -> Result<Vec<f64>, ConfigError> {
        if rates.len() != self.inputs.len() {
            return Err(ConfigError::new("rates", rates.len(), "one rate per input"));
        }
        let mut arriving = vec![0.0; self.nodes.len()];
        for (&i, &rate) in self.inputs.iter().zip(rates) {
            if !(rate >= 0.0 && rate.is_finite()) {
                return Err(ConfigError::new("rates", rate, "finite numbers of items per second ≥ 0"));
            }
            arriving[i] = rate;
        }
        for (i, v) in self.nodes.iter().enumerate() {
            if let Some(u) = v.upstream {
                let leaving = match self.nodes[u].kind {
                    Kind::Box { selectivity, .. } => arriving[u] * selectivity,
                    _ => arriving[u],
                };
                arriving[i] = leaving * keep[i];
            }
        }
        Ok(arriving)
    }

    /// For each node, the seconds of work per second done there and below it, at the rates
    /// `arriving`: one pass in reverse order. Each is part of the load, so finite with it.
    fn work_below(&self, arriving: &[f64]) -> Vec<f64> {
        let mut work = vec![0.0; self.nodes.len()];
        for (i, v) in self.nodes.iter().enumerate().rev() {
            let own = match v.kind {
                Kind::Box { cost, .. } => arriving[i] * cost,
                _ => 0.0,
            };
            work[i] = own + v.downstream.iter().map(|&d| work[d]).sum::<f64>();
        }
        work
    }

    /// Each node's path keep: the product of the keep fractions from its input down to it.
    fn path_keeps(&self, keep: &[f64]) -> Vec<f64> {
        let mut path = vec![1.0; self.nodes.len()];
        for (i, v) in self.nodes.iter().enumerate() {
            if let Some(u) = v.upstream {
                path[i] = path[u] * keep[i];
            }
        }
        path
    }

    /// For each node, `Σ u_q·k_q` over the queries at or below it: the utility a little more
    /// dropping on its incoming arc loses, per unit of its keep fraction relative to now.
    /// The utilities are scaled by the largest, so that their sums stay finite.
    fn worth_below(&self, keep: &[f64]) -> Vec<f64> {
        let path = self.path_keeps(keep);
        let scale = self.utility_scale();
        let mut worth = vec![0.0; self.nodes.len()];
        for (i, v) in self.nodes.iter().enumerate().rev() {
            worth[i] = match v.kind {
                Kind::Output { utility } => utility * scale * path[i],
                _ => v.downstream.iter().map(|&d| worth[d]).sum(),
            };
        }
        worth
    }
}

impl QueryNetwork {
    /// One over the largest utility (1 with none above 0): utilities so scaled sum to at most
    /// the number of outputs.
    fn utility_scale(&self) -> f64 {
        let largest = self
            .nodes
            .iter()
            .filter_map(|v| match v.kind {
                Kind::Output { utility } => Some(utility),
                _ => None,
            })
            .fold(0.0, f64::max);
        if largest > 0.0 { 1.0 / largest } else { 1.0 }
    }
}

/// Checks a finite quantity at least 0 given by the user.
fn non_negative(parameter: &'static str, value: f64) -> Result<f64, ConfigError> {
    if value >= 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(ConfigError::new(parameter, value, "a finite number ≥ 0"))
    }
}

/// A load that is a number: rates and costs whose products overflow are refused.
fn finite_load(load: f64) -> Result<f64, ConfigError> {
    if load.is_finite() {
        Ok(load)
    } else {
        Err(ConfigError::new("rates", load, "rates and costs whose load is finite"))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A random forest: each new node hangs under a random earlier input or box.
    fn network(spec: &[(u8, f64, f64, bool)], inputs: usize) -> QueryNetwork {
        let mut net = QueryNetwork::new();
        let mut feeders: Vec<Node> = (0..inputs).map(|_| net.input()).collect();
        for &(parent, cost, selectivity, is_output) in spec {
            let up = feeders[usize::from(parent) % feeders.len()];
            if is_output {
                net.output(up, cost * 1000.0).unwrap();
            } else {
                feeders.push(net.add_box(up, cost, selectivity).unwrap());
            }
        }
        net
    }

    /// Nodes (parent, cost, selectivity, output?), input rates, capacity and headroom.
    type Spec = (Vec<(u8, f64, f64, bool)>, Vec<f64>, f64, f64);

    fn specs() -> impl Strategy<Value = Spec> {
        (1usize..4).prop_flat_map(|inputs| {
            (
                prop::collection::vec((any::<u8>(), 0.0..0.01f64, 0.0..2.0f64, any::<bool>()), 0..24),
                prop::collection::vec(0.0..5000.0f64, inputs),
                0.01..4.0f64,
                0.05..=1.0f64,
            )
        })
    }

    /// Whether `node` begins a branch: its upstream is an input or a split.
    fn first_of_branch(net: &QueryNetwork, node: usize) -> bool {
        net.nodes[node]
            .upstream
            .is_some_and(|up| net.nodes[up].kind == Kind::Input || net.nodes[up].downstream.len() > 1)
    }

    proptest! {
        /// Every plan keeps fractions in [MIN_KEEP_PROBABILITY, 1], drops only on the first
        /// arc of a branch, leaves an unloaded network alone, says whether it meets `H·C`
        /// truly, drops no more than it must when it does, and, when it does not, has
        /// exhausted every location with work below it.
        #[test]
        fn plans_meet_their_target_and_drop_no_more((spec, rates, capacity, headroom) in specs()) {
            let net = network(&spec, rates.len());
            let target = capacity * headroom;
            let load = net.load(&rates).unwrap();
            for plan in [net.plan(&rates, capacity, headroom).unwrap(), net.plan_at_inputs(&rates, capacity, headroom).unwrap()] {
                let after = net.load_with(&rates, &plan).unwrap();
                prop_assert!(after <= load * (1.0 + 1e-12));
                prop_assert_eq!(plan.meets_target(), after <= target * (1.0 + TARGET_SLACK));
                if load <= target {
                    prop_assert_eq!(plan.drops().count(), 0);
                } else if plan.meets_target() {
                    prop_assert!(after >= target * (1.0 - 1e-9), "dropped to {} under {}", after, target);
                }
                for (node, keep) in plan.drops() {
                    prop_assert!((MIN_KEEP_PROBABILITY..1.0).contains(&keep));
                    prop_assert!(first_of_branch(&net, node.index));
                }
            }
            let plan = net.plan(&rates, capacity, headroom).unwrap();
            if !plan.meets_target() {
                let work = net.work_below(&net.arriving(&rates, &plan.keep).unwrap());
                for d in (0..net.nodes.len()).filter(|&d| first_of_branch(&net, d)) {
                    prop_assert!(work[d] == 0.0 || plan.keep[d] == MIN_KEEP_PROBABILITY, "{}", d);
                }
            }
        }

        /// On a star (one input, branches of one box and one query each) the drops are
        /// independent and the loss and the gain linear in them: a fractional knapsack. The
        /// plan keeps the utility of its exact solution, computed here apart: drop the
        /// branches in increasing order of utility per second of work, each down to the least
        /// keep fraction, the last only as far as the target needs.
        #[test]
        fn on_a_star_the_plan_is_the_fractional_knapsack(
            branches in prop::collection::vec((0.0001..0.01f64, 0.0..10.0f64), 1..8),
            rate in 100.0..5000.0f64,
            share in 0.01..0.99f64,
        ) {
            let mut net = QueryNetwork::new();
            let input = net.input();
            for &(cost, utility) in &branches {
                let b = net.add_box(input, cost, 1.0).unwrap();
                net.output(b, utility).unwrap();
            }
            let load = net.load(&[rate]).unwrap();
            let target = load * share;
            let plan = net.plan(&[rate], target, 1.0).unwrap();
            prop_assert!(plan.meets_target());

            let mut order: Vec<(f64, f64)> = branches.iter().map(|&(c, u)| (rate * c, u)).collect();
            order.sort_by(|a, b| (a.1 / a.0).total_cmp(&(b.1 / b.0)));
            let mut excess = load - target;
            let (mut kept, mut total) = (0.0, 0.0);
            for (work, utility) in order {
                let dropped = excess.min(work * (1.0 - MIN_KEEP_PROBABILITY));
                excess -= dropped;
                kept += utility * (1.0 - dropped / work);
                total += utility;
            }
            let knapsack = if total > 0.0 { kept / total } else { 1.0 };
            // Each of the n branches' sums rounds a few times: a relative 64·n·ε covers it.
            let tolerance = 64.0 * branches.len() as f64 * f64::EPSILON;
            let ours = net.utility_kept(&plan).unwrap();
            prop_assert!((ours - knapsack).abs() <= tolerance, "{} against {}", ours, knapsack);
        }
    }

    #[test]
    fn bad_inputs_are_refused() {
        let mut net = QueryNetwork::new();
        let input = net.input();
        let out = net.output(input, 1.0).unwrap();
        assert!(net.add_box(out, 0.1, 1.0).is_err());
        assert!(net.add_box(input, f64::INFINITY, 1.0).is_err());
        assert!(net.add_box(input, 0.1, -0.5).is_err());
        assert!(net.load(&[]).is_err());
        assert!(net.load(&[f64::NAN]).is_err());
        assert!(net.plan(&[1.0], 0.0, 0.9).is_err());
        assert!(net.plan(&[1.0], 1.0, 1.5).is_err());
        let op = net.add_box(input, f64::MAX, 1.0).unwrap();
        assert!(net.load(&[f64::MAX]).is_err()); // the load overflows
        assert_eq!(net.plan(&[0.0], 1.0, 1.0).unwrap().keep(op), 1.0);
    }

    #[test]
    fn nodes_and_plans_of_another_network_are_refused() {
        let mut a = QueryNetwork::new();
        let mut b = QueryNetwork::new();
        let (input_a, input_b) = (a.input(), b.input());
        let op_a = a.add_box(input_a, 0.001, 1.0).unwrap();
        b.add_box(input_b, 0.001, 1.0).unwrap();
        // Same index, other network.
        assert!(b.add_box(op_a, 0.001, 1.0).is_err() && b.output(op_a, 1.0).is_err());
        let plan = a.plan(&[2000.0], 1.0, 0.9).unwrap();
        assert!(b.load_with(&[2000.0], &plan).is_err() && b.utility_kept(&plan).is_err());
        assert!(plan.keep(op_a) < 1.0);
        let op_b = Node { network: b.id, index: op_a.index };
        assert_eq!(plan.keep(op_b), 1.0);
    }

    #[test]
    fn extreme_values_give_numbers_not_nan() {
        // Utilities whose sum overflows.
        let mut net = QueryNetwork::new();
        let input = net.input();
        let (x, y) = (net.add_box(input, 0.001, 1.0).unwrap(), net.add_box(input, 0.002, 1.0).unwrap());
        net.output(x, f64::MAX).unwrap();
        net.output(y, f64::MAX).unwrap();
        let plan = net.plan(&[1000.0], 1.0, 0.5).unwrap();
        assert!(plan.meets_target());
        let kept = net.utility_kept(&plan).unwrap();
        assert!(kept.is_finite() && (0.0..=1.0).contains(&kept), "{kept}");

        // A selectivity that would overflow a per-item coefficient, at a rate that keeps the
        // load finite: the plan still drops what it must.
        let mut net = QueryNetwork::new();
        let input = net.input();
        let fan = net.add_box(input, 0.0, 1e300).unwrap();
        let dear = net.add_box(fan, 1e-10, 1.0).unwrap();
        net.output(dear, 1.0).unwrap();
        let load = net.load(&[1e-300]).unwrap();
        assert!((load - 1e-10).abs() < 1e-20);
        let plan = net.plan(&[1e-300], 1e-10, 0.5).unwrap();
        assert!(plan.meets_target() && (plan.keep(fan) - 0.5).abs() < 1e-12);
    }
}
