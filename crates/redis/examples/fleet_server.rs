//! A fleet of HTTP servers sharing one limit over Redis: each instance is this axum server with
//! the tower layer over an `AsyncRedisLimiter` on the same Redis and key prefix, so a client
//! IP gets 5 requests per 10 seconds across all instances together, whichever it reaches.
//!
//! ```text
//! redis-server --port 6379 --save '' --appendonly no     # a throwaway Redis; `bash ci/redis.sh` installs it
//! cargo run -p slidelimit-redis --features tokio --example fleet_server -- --listen 127.0.0.1:3001
//! cargo run -p slidelimit-redis --features tokio --example fleet_server -- --listen 127.0.0.1:3002
//! for port in 3001 3002 3001 3002 3001 3002 3001; do
//!     curl -s -o /dev/null -w "$port: %{http_code}\n" http://127.0.0.1:$port/
//! done
//! curl -i http://127.0.0.1:3002/                         # the 429 with Retry-After and RateLimit
//! ```
//!
//! The first five requests are answered 200, by both instances, and the rest 429 until the
//! oldest leaves the window: the count lives in Redis, not in either process. Options:
//! `--listen ADDR` (default 127.0.0.1:3000) and `--redis URL` (default `$REDIS_URL`, else
//! redis://127.0.0.1:6379/). If Redis stops answering, requests get 503 with `Retry-After: 1`
//! (fail closed) within the 100 ms timeout.

use std::error::Error;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use slidelimit::Limit;
use slidelimit_redis::{AsyncRedisLimiter, FailurePolicy, Options};
use slidelimit_tower::{PeerIp, PolicyName, RateLimitLayer};

const USAGE: &str = "usage: fleet_server [--listen ADDR] [--redis URL]";

/// The address to serve and the Redis to share, from the command line.
fn parse_args() -> Result<(SocketAddr, String), Box<dyn Error>> {
    let mut listen: SocketAddr = "127.0.0.1:3000".parse()?;
    let mut redis =
        std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_string());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value ({USAGE})"));
        match arg.as_str() {
            "--listen" => {
                let text = value()?;
                listen = text.parse().map_err(|e| format!("--listen {text}: {e}"))?;
            }
            "--redis" => redis = value()?,
            _ => return Err(format!("unknown argument {arg} ({USAGE})").into()),
        }
    }
    Ok((listen, redis))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let (listen, redis) = parse_args()?;

    // Redis limiters count in microseconds, by the Redis server's clock: one clock for the
    // whole fleet, so the instances' own clocks need not agree.
    let limit = Limit::per(5, Duration::from_secs(10), Duration::from_micros(1))?;
    let options = Options::new()
        // Same prefix, same limit: instances with another prefix would count apart.
        .prefix("fleet-example")
        // No request waits longer than this on Redis...
        .timeout(Duration::from_millis(100))
        // ...and when Redis cannot answer, refuse (503) rather than admit unlimited.
        .failure(FailurePolicy::FailClosed);
    let limiter = Arc::new(AsyncRedisLimiter::new(&redis, limit, options)?);
    // The limiter connects lazily; ask once now so that a wrong URL fails here, not as a 503
    // on every request.
    if let Err(error) = limiter.status("startup-check").await {
        return Err(format!(
            "Redis at {redis}: {error} (start one with: redis-server --port 6379 --save '' \
             --appendonly no)"
        )
        .into());
    }

    // Keyed by the connection's IP; behind a proxy, see PeerIp::x_forwarded_for_from.
    let layer = RateLimitLayer::new(limiter, PeerIp::new()).policy_name(PolicyName::new("fleet")?);
    let app = Router::new()
        .route(
            "/",
            get(move || async move { format!("hello from {listen}\n") }),
        )
        .layer(layer);

    let listener = tokio::net::TcpListener::bind(listen).await?;
    println!(
        "listening on http://{}, limit shared through {redis}: 5 requests per 10 s per client IP",
        listener.local_addr()?
    );
    // Connect info puts each connection's peer address where PeerIp reads it.
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}
