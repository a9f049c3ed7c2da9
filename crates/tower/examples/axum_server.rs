//! An axum server limited per client IP: 10 requests per minute each, shared by its routes.
//!
//! ```text
//! cargo run -p slidelimit-tower --example axum_server            # port 3000
//! cargo run -p slidelimit-tower --example axum_server -- 8080    # or PORT=8080
//! curl -i http://127.0.0.1:3000/hello/you
//! ```
//!
//! The 11th request of a minute is answered `429 Too Many Requests` with `Retry-After`;
//! every answer carries `RateLimit-Policy: "per-ip";q=10;w=60` and `RateLimit`.

use std::error::Error;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Path;
use axum::routing::get;
use axum::Router;
use slidelimit::{Limit, LockFreeLimiter};
use slidelimit_tower::{PeerIp, PolicyName, RateLimitLayer};

/// The port from the first argument, else `PORT`, else 3000.
fn port() -> Result<u16, Box<dyn Error>> {
    let text = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("PORT").ok());
    Ok(match text {
        Some(text) => text.parse().map_err(|e| format!("port {text:?}: {e}"))?,
        None => 3000,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let port = port()?;
    // The layer's clock counts nanoseconds, so the limit's ticks are nanoseconds too.
    let limit = Limit::per_minute(10, Duration::from_nanos(1))?;
    let limiter = Arc::new(LockFreeLimiter::<IpAddr>::new(limit));
    let layer = RateLimitLayer::new(limiter, PeerIp::new()).policy_name(PolicyName::new("per-ip")?);

    let app = Router::new()
        .route("/", get(|| async { "hello\n" }))
        .route(
            "/hello/{name}",
            get(|Path(name): Path<String>| async move { format!("hello, {name}\n") }),
        )
        .layer(layer);

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    // Connect info puts each connection's peer address where PeerIp reads it.
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}
