//! The [synopses DataFusion functions](synopses_datafusion) on a
//! [Ballista](https://datafusion.apache.org/ballista/) cluster, for the distributed tests: a
//! scheduler and executors on the loopback interface, each with the functions registered.
//!
//! Ballista ships the query plan to its scheduler and the plan's stages to its executors as
//! protocol buffers, in which a user-defined function is only its name: every side must have
//! the functions in its registry. The scheduler and executors take theirs from a
//! [`SessionState`] ([`session_state`] builds one with this crate's functions). The client's
//! context must have them too, registered *after* it connects: Ballista 55's
//! `remote_with_state` replaces the state's functions with its own defaults.
//!
//! ```no_run
//! use ballista::prelude::SessionContextExt;
//! use datafusion::prelude::SessionContext;
//!
//! # #[tokio::main]
//! # async fn main() -> datafusion::error::Result<()> {
//! let scheduler = synopses_datafusion_ballista::cluster(&synopses_datafusion_ballista::session_state(4), 2).await?;
//! let ctx = SessionContext::remote_with_state(&scheduler, synopses_datafusion_ballista::session_state(4)).await?;
//! synopses_datafusion::register(&ctx);
//! ctx.sql("SELECT distinct_count(user_id) FROM visits").await?;
//! # Ok(())
//! # }
//! ```
//!
//! A real deployment does the same in its scheduler's and executors' `main`:
//! `ballista_scheduler`'s configuration takes a session builder, `ballista_executor`'s an
//! `override_function_registry` (from `synopses_datafusion::aggregate_functions()` and
//! `scalar_functions()`).

#![deny(missing_docs)]
#![deny(unsafe_code)]

use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::SessionConfigExt;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::session_state::SessionState;
use datafusion::prelude::SessionConfig;

/// A session state for every side of a cluster: Ballista's configuration with
/// `target_partitions`, DataFusion's functions, and this crate's.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
///
/// let state = synopses_datafusion_ballista::session_state(4);
/// assert!(state.udaf("distinct_count").is_ok() && state.udaf("count").is_ok());
/// ```
#[must_use]
pub fn session_state(target_partitions: usize) -> SessionState {
    let mut builder = SessionStateBuilder::new()
        .with_config(SessionConfig::new_with_ballista().with_target_partitions(target_partitions))
        .with_default_features();
    // Beside DataFusion's own (`with_aggregate_functions` would replace them).
    let aggregates = synopses_datafusion::aggregate_functions().into_iter().map(Arc::new);
    builder.aggregate_functions().get_or_insert_with(Vec::new).extend(aggregates);
    let scalars = synopses_datafusion::scalar_functions().into_iter().map(Arc::new);
    builder.scalar_functions().get_or_insert_with(Vec::new).extend(scalars);
    builder.build()
}

/// Starts a scheduler and `executors` executors of two task slots each, in this process
/// but talking gRPC and Arrow Flight over loopback, every one with the functions of `state`;
/// returns the scheduler's address, for `SessionContext::remote_with_state`.
///
/// # Errors
///
/// When a server cannot bind its port, or the scheduler does not answer within 5 seconds.
///
/// ```no_run
/// # #[tokio::main]
/// # async fn main() -> datafusion::error::Result<()> {
/// let scheduler = synopses_datafusion_ballista::cluster(&synopses_datafusion_ballista::session_state(2), 1).await?;
/// assert!(scheduler.starts_with("df://localhost:"));
/// # Ok(())
/// # }
/// ```
pub async fn cluster(state: &SessionState, executors: usize) -> Result<String> {
    let external = |e: Box<dyn std::error::Error + Send + Sync>| DataFusionError::External(e);
    let address = ballista_scheduler::standalone::new_standalone_scheduler_from_state(state)
        .await
        .map_err(|e| external(e.into()))?;
    if !address.ip().is_loopback() {
        return Err(DataFusionError::Configuration(format!("the scheduler listens on {address}, not on loopback")));
    }
    let url = format!("http://localhost:{}", address.port());
    let mut attempts = 0;
    let scheduler = loop {
        match SchedulerGrpcClient::connect(url.clone()).await {
            Ok(client) => break client,
            Err(e) if attempts == 100 => return Err(external(e.into())),
            Err(_) => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    for _ in 0..executors {
        ballista_executor::new_standalone_executor_from_state(scheduler.clone(), 2, state)
            .await
            .map_err(|e| external(e.into()))?;
    }
    Ok(format!("df://localhost:{}", address.port()))
}
