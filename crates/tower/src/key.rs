//! What a request is limited by: the [`KeyExtractor`] trait and the ready-made extractors
//! (the peer's IP in [`peer`], a header's value, the path, any closure).
//!
//! Every extractor answers `None` when the request has no key (no such header, no peer
//! address); the layer then does what its [`MissingKey`](crate::MissingKey) policy says.

use std::hash::Hash;

use http::header::HeaderName;
use http::Request;

mod forwarding;
pub mod peer;
mod proxies;

pub use peer::{PeerAddr, PeerIp};
pub use proxies::{ProxyListError, TrustedProxies};

/// Takes the rate-limit key from a request.
///
/// Implement it for a key of your own, or wrap a closure with [`from_fn`].
pub trait KeyExtractor<B> {
    /// The key the limiter counts by.
    type Key: Hash + Eq + Clone + Send + Sync + 'static;

    /// The request's key, or `None` when it has none.
    fn extract(&self, request: &Request<B>) -> Option<Self::Key>;
}

/// Keys by the value of one request header (an API key, a tenant id), as text.
///
/// A request without the header, or whose first value of it is not visible ASCII, has no key.
/// Only the first value counts when the header is repeated.
///
/// Anyone can write any value into a header: limit by a header your authentication has already
/// checked (or whose values you issue), or every new value a client makes up is a fresh quota.
///
/// ```
/// use http::Request;
/// use slidelimit_tower::key::{Header, KeyExtractor};
///
/// let key = Header::new(http::HeaderName::from_static("x-api-key"));
/// let request = Request::builder().header("x-api-key", "k-42").body(())?;
/// assert_eq!(key.extract(&request), Some("k-42".to_owned()));
/// assert_eq!(key.extract(&Request::new(())), None);
/// # Ok::<(), http::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Header {
    name: HeaderName,
}

impl Header {
    /// Keys by header `name`.
    #[must_use]
    pub fn new(name: HeaderName) -> Self {
        Self { name }
    }
}

impl<B> KeyExtractor<B> for Header {
    type Key = String;

    fn extract(&self, request: &Request<B>) -> Option<String> {
        let value = request.headers().get(&self.name)?;
        value.to_str().ok().map(str::to_owned)
    }
}

/// Keys by the request's path (no query string): one quota per endpoint, shared by every
/// client.
///
/// Each distinct path is a key, so paths with ids in them (`/users/1`, `/users/2`, …) make as
/// many keys as there are ids; the limiter's idle-key removal bounds the memory, but a limit per
/// route is better built with [`from_fn`] over a route pattern.
///
/// ```
/// use http::Request;
/// use slidelimit_tower::key::{KeyExtractor, Path};
///
/// let request = Request::builder().uri("/search?q=rust").body(())?;
/// assert_eq!(Path.extract(&request), Some("/search".to_owned()));
/// # Ok::<(), http::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Path;

impl<B> KeyExtractor<B> for Path {
    type Key = String;

    fn extract(&self, request: &Request<B>) -> Option<String> {
        Some(request.uri().path().to_owned())
    }
}

/// A closure as a key extractor: see [`from_fn`].
#[derive(Clone, Copy, Debug)]
pub struct FromFn<F> {
    f: F,
}

/// Keys by whatever `f` returns: `None` means the request has no key.
///
/// ```
/// use http::{Method, Request};
/// use slidelimit_tower::key::{from_fn, KeyExtractor};
///
/// // Writes are limited per path; reads are not limited (no key: pass them with
/// // `MissingKey::Allow`).
/// let key = from_fn(|request: &Request<()>| {
///     (request.method() != Method::GET).then(|| request.uri().path().to_owned())
/// });
/// let post = Request::post("/items").body(())?;
/// assert_eq!(key.extract(&post), Some("/items".to_owned()));
/// assert_eq!(key.extract(&Request::get("/items").body(())?), None);
/// # Ok::<(), http::Error>(())
/// ```
pub fn from_fn<F>(f: F) -> FromFn<F> {
    FromFn { f }
}

impl<B, K, F> KeyExtractor<B> for FromFn<F>
where
    F: Fn(&Request<B>) -> Option<K>,
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    type Key = K;

    fn extract(&self, request: &Request<B>) -> Option<K> {
        (self.f)(request)
    }
}
