//! TLS (`rediss://`, features `tls` and `tokio`) for `AsyncRedisLimiter`, against the same
//! real TLS `redis-server` and openssl-made certificates as the blocking limiters' tests
//! (`production_tls.rs`, whose helpers these share).

#![cfg(all(feature = "tls", feature = "tokio"))]

use std::time::{Duration, Instant};

use slidelimit_redis::{AsyncRedisLimiter, Error, Options, Tls};

use crate::production_tls::{assert_timed_out_in_time, options, Pki, TlsServer};
use crate::server::SilentListener;
use crate::{limit, runtime};

/// (a) The async limiter decides over TLS, trusting the CA the test gives, by IP address and
/// by host name (each checked against the certificate); the decisions are the server's (its
/// keys are there, read on the plain port).
#[test]
fn asynchronous_tls_limiter_decides_with_the_given_ca() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, false);
    let by_name = format!("rediss://localhost:{}/", server.tls_port);
    runtime().block_on(async {
        for (url, prefix) in [(server.url(), "tls-async-a"), (by_name, "tls-async-a-name")] {
            // 3 per minute: no window ends during the test.
            let limiter = AsyncRedisLimiter::new(
                &url,
                limit(3, 60_000_000),
                options(prefix).tls(pki.trust()),
            )
            .expect("limiter");
            let mut admitted = Vec::new();
            for _ in 0..4 {
                admitted.push(limiter.check_and_hit("k").await.expect("decided").admitted);
            }
            assert_eq!(admitted, [true, true, true, false], "{url}");
        }
    });
    assert!(server.calls("evalsha") >= 8, "the calls reached the server");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("tls-async-a*")
        .query(&mut server.server.connection())
        .expect("KEYS");
    assert!(
        keys.iter().any(|key| key.starts_with("tls-async-a-name")),
        "the limiter wrote its keys over TLS: {keys:?}"
    );
}

/// (b) Mutual TLS (`tls-auth-clients yes`): the async limiter with a client certificate the
/// CA signed is served; one without gets a connection error, never a decision, and the
/// server runs nothing for it.
#[test]
fn asynchronous_tls_mutual_tls_needs_the_client_identity() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, true);
    let identified = pki
        .trust()
        .client_identity(pki.read("client.crt"), pki.read("client.key"))
        .expect("the client identity");
    runtime().block_on(async {
        let limiter = AsyncRedisLimiter::new(
            &server.url(),
            limit(2, 60_000_000),
            options("tls-async-b").tls(identified),
        )
        .expect("limiter");
        assert!(limiter.check_and_hit("k").await.expect("decided").admitted);
        let ran = server.calls("evalsha");
        assert!(ran >= 1);

        let anonymous = AsyncRedisLimiter::new(
            &server.url(),
            limit(2, 60_000_000),
            options("tls-async-b-anonymous").tls(pki.trust()),
        )
        .expect("limiter");
        for _ in 0..2 {
            let err = anonymous.check_and_hit("k").await.unwrap_err();
            assert!(
                matches!(err, Error::Connection(_)),
                "no client certificate: a connection error, got {err:?}"
            );
        }
        assert_eq!(server.calls("evalsha"), ran, "only the identified call ran");
    });
}

/// (c) A port that accepts TCP and never answers the handshake: every call ends by its
/// timeout (the tokio timeout around the connection attempt bounds the handshake), with the
/// timeout error.
#[test]
fn asynchronous_tls_handshake_that_never_completes_ends_at_the_timeout() {
    let pki = Pki::new();
    let silent = SilentListener::start();
    let url = silent.url().replacen("redis://", "rediss://", 1);
    let timeout = Duration::from_millis(150);
    runtime().block_on(async {
        let limiter = AsyncRedisLimiter::new(
            &url,
            limit(2, 60_000_000),
            options("tls-async-c").timeout(timeout).tls(pki.trust()),
        )
        .expect("limiter");
        for _ in 0..3 {
            let start = Instant::now();
            let result = limiter.check_and_hit("k").await;
            assert_timed_out_in_time(result, start.elapsed(), timeout);
        }
    });
}

/// (d) A server whose certificate the given CA did not sign: a typed connection error that
/// says why, and the server ran nothing.
#[test]
fn asynchronous_tls_wrong_ca_is_a_connection_error() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, false);
    let other_ca = Tls::ca_pem(pki.read("other-ca.crt")).expect("the other CA");
    runtime().block_on(async {
        let limiter = AsyncRedisLimiter::new(
            &server.url(),
            limit(2, 60_000_000),
            options("tls-async-d").tls(other_ca),
        )
        .expect("limiter");
        let err = limiter.check_and_hit("k").await.unwrap_err();
        assert!(
            matches!(err, Error::Connection(_)),
            "an unknown issuer: a connection error, got {err:?}"
        );
        assert!(
            err.to_string().contains("certificate"),
            "the error says why: {err}"
        );
    });
    assert_eq!(server.calls("evalsha"), 0);
    assert_eq!(server.calls("script"), 0);
}

/// Configuration that cannot work is refused when the async limiter is built, as for the
/// blocking ones: `#insecure`, and TLS options for a plain URL (which would otherwise
/// connect in plain text).
#[test]
fn asynchronous_tls_bad_configuration_is_a_config_error() {
    let pki = Pki::new();
    for (url, options) in [
        (
            "rediss://127.0.0.1:6380/#insecure",
            Options::new().tls(pki.trust()),
        ),
        ("redis://127.0.0.1:6379/", Options::new().tls(pki.trust())),
    ] {
        let err = AsyncRedisLimiter::new(url, limit(2, 60_000_000), options).unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{url}: {err:?}");
    }
}

/// The cluster does not take TLS yet: `rediss://` is refused when it is built, rather than
/// connect with settings other than the `Tls` given.
#[cfg(feature = "cluster")]
#[test]
fn asynchronous_tls_cluster_refuses_rediss() {
    let pki = Pki::new();
    for options in [Options::new(), Options::new().tls(pki.trust())] {
        let err = AsyncRedisLimiter::cluster(
            &["rediss://127.0.0.1:7000/"],
            limit(2, 60_000_000),
            options,
        )
        .unwrap_err();
        assert!(
            matches!(&err, Error::Config(detail) if detail.contains("rediss")),
            "{err:?}"
        );
    }
}
