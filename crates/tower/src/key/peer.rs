//! Keys by the client's IP address: the connection's peer, or the address a trusted proxy
//! wrote into `X-Forwarded-For` or `Forwarded` (RFC 7239).

use std::any::Any;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use http::Request;

use super::forwarding::{
    forwarded_elements, forwarded_for, nth_from_right, parse_node, x_forwarded_for_entries,
};
use super::proxies::TrustedProxies;
use super::KeyExtractor;

/// The connection's remote address, put in the request's extensions by the server.
///
/// axum does this itself (as its own `ConnectInfo`, which [`PeerIp`] reads with the crate's
/// `axum` feature). With plain hyper, insert it for each connection, for example with
/// `tower::ServiceBuilder::new().map_request(move |mut req: Request<_>| { req.extensions_mut()
/// .insert(PeerAddr(addr)); req })` in front of the layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerAddr(pub SocketAddr);

/// Keys by the client's IP address.
///
/// [`PeerIp::new`] reads the connection's remote address from the request's extensions: a
/// [`PeerAddr`], or (with the crate's `axum` feature) axum's `ConnectInfo<SocketAddr>`, which
/// `Router::into_make_service_with_connect_info::<SocketAddr>()` inserts. Without the feature
/// an axum request has neither, so it would have no key: applying the layer with it to an
/// axum service then panics at start-up, naming the feature, rather than answering every
/// request with 400. If your own middleware inserts [`PeerAddr`] in front of the layer,
/// [`PeerIp::from_peer_addr`] reads only that, and is never checked.
///
/// Why a panic rather than `axum` as a default feature: the feature pulls axum into every
/// build, hyper-only servers included, and a default can still be turned off by
/// `default-features = false`, which would bring the silent 400s back. The layer can tell an
/// axum service from its type's name, so it refuses the one combination that can never work.
///
/// Behind reverse proxies the connection comes from the last proxy, so every client would
/// share its address: read the client's address from the header the proxies append to
/// instead, trusting it only as far as you trust who wrote it.
///
/// # Spoofing, and which form to use
/// A client can send `X-Forwarded-For` or `Forwarded` itself, with any address in it, and so
/// pick a fresh key for each request. Two forms read the header safely in different setups:
///
/// - **By address** ([`PeerIp::x_forwarded_for_from`], [`PeerIp::forwarded_from`]): the
///   header counts only when the connection comes from one of your [`TrustedProxies`]; it is
///   then walked from the right, skipping entries that are themselves trusted proxies, and the
///   first entry that is not is the client. A client that reaches the server around the
///   proxies (a health-check port, a second listener, a misrouted load balancer) is keyed by
///   its own address, whatever it wrote. Use this form whenever you can list your proxies.
/// - **By count** ([`PeerIp::x_forwarded_for`], [`PeerIp::forwarded`]): with
///   `trusted_proxies = n`, the `n`-th entry from the right (each proxy appends the address it
///   got the request from, so entries a client forged stay on the left). That is only right
///   when every request reaches the server through exactly `n` proxies that append to the
///   header and the server cannot be reached around them; if clients can connect directly,
///   the header is entirely theirs. A request with fewer than `n` entries, or whose entry is
///   not an IP address (`unknown`, an obfuscated node), has no key.
///
/// # How the headers are split
/// Both headers are lists (RFC 9110, section 5.6.1): their lines count in order, one after
/// the other, and empty elements (`a,,b`, a trailing comma, a line of whitespace) are skipped.
/// What a proxy appends must read as it wrote it whatever a client sent before it, so:
///
/// - `X-Forwarded-For` has no quoted form: **every comma separates**. A quote is an ordinary
///   character of its entry, which is then not an address (`"9.9.9.9`), and never joins the
///   entries on either side of it.
/// - `Forwarded` keeps RFC 7239's quoted strings, which may hold commas (`host="a,b"`), but an
///   unbalanced quote **costs only its own element**. Each line is cut at every comma, then
///   the pieces are grouped from the right, the end proxies append to: a piece that closes a
///   quoted string is joined with the pieces to its left back to the nearest one that opens
///   it, and only when the joined text is one well-formed element; any other piece that is
///   not a well-formed element on its own (an unbalanced quote above all) is one malformed
///   element, which counts as an entry that is not an address. Quoted strings never span
///   lines.
///
/// IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`) count as their IPv4 address. One IPv6
/// client often holds a whole `/64`: [`PeerIp::ipv6_prefix`] keys IPv6 clients by a prefix.
///
/// ```
/// use std::net::{IpAddr, SocketAddr};
/// use http::Request;
/// use slidelimit_tower::key::{KeyExtractor, PeerAddr, PeerIp};
///
/// let mut request = Request::builder()
///     .header("x-forwarded-for", "203.0.113.9, 198.51.100.7")
///     .body(())?;
/// request.extensions_mut().insert(PeerAddr("10.0.0.2:41000".parse::<SocketAddr>()?));
///
/// assert_eq!(PeerIp::new().extract(&request), Some("10.0.0.2".parse::<IpAddr>()?));
/// // One proxy in front of the server: the entry it appended, the rightmost.
/// assert_eq!(PeerIp::x_forwarded_for(1).extract(&request), Some("198.51.100.7".parse()?));
/// // Two proxies: the first one appended the client's address, the second the first's.
/// assert_eq!(PeerIp::x_forwarded_for(2).extract(&request), Some("203.0.113.9".parse()?));
/// assert_eq!(PeerIp::x_forwarded_for(3).extract(&request), None, "not through 3 proxies");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerIp {
    source: Source,
    /// IPv6 addresses are cut to this many leading bits (128 keeps them whole).
    ipv6_prefix_bits: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    /// A [`PeerAddr`], or axum's `ConnectInfo` with the `axum` feature.
    Connection,
    /// A [`PeerAddr`] only: the caller inserts it.
    PeerAddr,
    XForwardedFor {
        trusted_proxies: usize,
    },
    Forwarded {
        trusted_proxies: usize,
    },
    /// `X-Forwarded-For`, walked past the trusted proxies (the connection's peer first).
    XForwardedForFrom(TrustedProxies),
    /// `Forwarded`'s `for=` nodes, walked past the trusted proxies.
    ForwardedFrom(TrustedProxies),
}

impl Source {
    /// Whether the key starts from the connection's address (a [`PeerAddr`] or axum's
    /// `ConnectInfo`).
    fn reads_connection(&self) -> bool {
        matches!(
            self,
            Self::Connection | Self::XForwardedForFrom(_) | Self::ForwardedFrom(_)
        )
    }
}

impl PeerIp {
    /// The connection's remote address (see the type's docs for where it is read from).
    #[must_use]
    pub const fn new() -> Self {
        Self {
            source: Source::Connection,
            ipv6_prefix_bits: 128,
        }
    }

    /// The connection's remote address from a [`PeerAddr`] that your own code inserts in
    /// front of the layer, and nothing else (never axum's `ConnectInfo`). Unlike
    /// [`PeerIp::new`], it is not refused in front of an axum service without the crate's
    /// `axum` feature: you vouch for the address.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use http::Request;
    /// use slidelimit_tower::key::{KeyExtractor, PeerAddr, PeerIp};
    ///
    /// let mut request = Request::new(());
    /// assert_eq!(PeerIp::from_peer_addr().extract(&request), None);
    /// request.extensions_mut().insert(PeerAddr("192.0.2.4:5000".parse::<SocketAddr>()?));
    /// assert_eq!(PeerIp::from_peer_addr().extract(&request), Some("192.0.2.4".parse()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn from_peer_addr() -> Self {
        Self::from_source(Source::PeerAddr)
    }

    /// The `trusted_proxies`-th address from the right of the `X-Forwarded-For` header (its
    /// lines joined in order, split at every comma, empty entries skipped: see the type's
    /// "How the headers are split"). Read the type's "Spoofing" section first. With
    /// `trusted_proxies = 0` the header is ignored and the connection's address is used.
    #[must_use]
    pub const fn x_forwarded_for(trusted_proxies: usize) -> Self {
        Self::from_source(if trusted_proxies == 0 {
            Source::Connection
        } else {
            Source::XForwardedFor { trusted_proxies }
        })
    }

    /// The `for=` address of the `trusted_proxies`-th element from the right of the
    /// `Forwarded` header (RFC 7239; a malformed element counts as one element without an
    /// address, an empty one not at all: see the type's "How the headers are split"). Read
    /// the type's "Spoofing" section first. With `trusted_proxies = 0` the header is ignored
    /// and the connection's address is used.
    #[must_use]
    pub const fn forwarded(trusted_proxies: usize) -> Self {
        Self::from_source(if trusted_proxies == 0 {
            Source::Connection
        } else {
            Source::Forwarded { trusted_proxies }
        })
    }

    /// The client's address by `X-Forwarded-For`, trusted only from `proxies`: the
    /// connection's address if it is not one of them; otherwise the header's entries (its
    /// lines joined in order, split at every comma, quotes included, empty entries skipped:
    /// see the type's "How the headers are split") walked from the right, skipping trusted
    /// proxies, to the first that is not. Read the type's "Spoofing" section first.
    ///
    /// An entry that is not an address (`unknown`, an obfuscated node, garbage such as
    /// `"9.9.9.9`) stops the walk at the nearest trusted hop, and a header of trusted entries
    /// only gives its leftmost, so such requests share the key of a proxy rather than getting
    /// one a client chose. Such an entry is only ever the one a client wrote: it cannot hide
    /// the entries the proxies appended after it. A header that is not visible ASCII is
    /// ignored (the key is the connection's address). Like [`PeerIp::new`], it reads the
    /// connection from a [`PeerAddr`] or, with the `axum` feature, axum's `ConnectInfo`.
    ///
    /// ```
    /// use std::net::{IpAddr, SocketAddr};
    /// use http::Request;
    /// use slidelimit_tower::key::{KeyExtractor, PeerAddr, PeerIp, TrustedProxies};
    ///
    /// let key = PeerIp::x_forwarded_for_from(TrustedProxies::new(["10.0.0.0/8"])?);
    /// let request = |peer: &str, header: &str| -> Result<_, Box<dyn std::error::Error>> {
    ///     let mut request = Request::builder().header("x-forwarded-for", header).body(())?;
    ///     request.extensions_mut().insert(PeerAddr(peer.parse::<SocketAddr>()?));
    ///     Ok(request)
    /// };
    /// // Through two of our proxies: the client is the first untrusted entry from the right,
    /// // whatever it wrote on the left.
    /// let through = request("10.0.0.2:41000", "6.6.6.6, 203.0.113.9, 10.0.0.1")?;
    /// assert_eq!(key.extract(&through), Some("203.0.113.9".parse::<IpAddr>()?));
    /// // Around them: the connection's own address, the header ignored.
    /// let around = request("198.51.100.4:5000", "203.0.113.9")?;
    /// assert_eq!(key.extract(&around), Some("198.51.100.4".parse::<IpAddr>()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn x_forwarded_for_from(proxies: TrustedProxies) -> Self {
        Self::from_source(Source::XForwardedForFrom(proxies))
    }

    /// The client's address by the `for=` nodes of `Forwarded` (RFC 7239: every element of
    /// every header line, quoted and bracketed forms, ports), trusted only from `proxies`, as
    /// [`PeerIp::x_forwarded_for_from`] walks `X-Forwarded-For`. An element without `for=`
    /// counts as an entry that is not an address, and so does a malformed one, such as a
    /// client's unbalanced `for="9.9.9.9`; empty elements are skipped. Quoted strings may
    /// hold commas, but a client's unbalanced quote never reaches the elements the proxies
    /// appended after it (see the type's "How the headers are split").
    ///
    /// ```
    /// use std::net::{IpAddr, SocketAddr};
    /// use http::Request;
    /// use slidelimit_tower::key::{KeyExtractor, PeerAddr, PeerIp, TrustedProxies};
    ///
    /// let key = PeerIp::forwarded_from(TrustedProxies::new(["2001:db8::/32"])?);
    /// let mut request = Request::builder()
    ///     .header("forwarded", r#"for=192.0.2.60;proto=http, for="[2001:db8::17]:4711""#)
    ///     .body(())?;
    /// request.extensions_mut().insert(PeerAddr("[2001:db8::1]:443".parse::<SocketAddr>()?));
    /// assert_eq!(key.extract(&request), Some("192.0.2.60".parse::<IpAddr>()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn forwarded_from(proxies: TrustedProxies) -> Self {
        Self::from_source(Source::ForwardedFrom(proxies))
    }

    const fn from_source(source: Source) -> Self {
        Self {
            source,
            ipv6_prefix_bits: 128,
        }
    }

    /// Keys IPv6 clients by their first `bits` bits (64 is a common choice: one subscriber's
    /// network); `bits` above 128 count as 128. IPv4 addresses stay whole.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use http::Request;
    /// use slidelimit_tower::key::{KeyExtractor, PeerAddr, PeerIp};
    ///
    /// let mut request = Request::new(());
    /// request.extensions_mut().insert(PeerAddr("[2001:db8:1:2:aaaa::1]:443".parse::<SocketAddr>()?));
    /// let key = PeerIp::new().ipv6_prefix(64).extract(&request);
    /// assert_eq!(key, Some("2001:db8:1:2::".parse()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn ipv6_prefix(mut self, bits: u8) -> Self {
        self.ipv6_prefix_bits = if bits > 128 { 128 } else { bits };
        self
    }

    /// The address as keyed: IPv4-mapped addresses as IPv4, IPv6 cut to the prefix.
    fn normalize(&self, ip: IpAddr) -> IpAddr {
        match ip.to_canonical() {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => {
                let bits = u32::from(self.ipv6_prefix_bits);
                // checked_shl: a shift by 128 (a /0 prefix) keeps nothing.
                let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        }
    }
}

impl Default for PeerIp {
    fn default() -> Self {
        Self::new()
    }
}

impl<B> KeyExtractor<B> for PeerIp {
    type Key = IpAddr;

    fn extract(&self, request: &Request<B>) -> Option<IpAddr> {
        let ip = match self.source {
            Source::Connection => connection_ip(request)?,
            Source::PeerAddr => request.extensions().get::<PeerAddr>()?.0.ip(),
            Source::XForwardedFor { trusted_proxies } => {
                let entries = x_forwarded_for_entries(request.headers());
                parse_node(nth_from_right(&entries, trusted_proxies)?)?
            }
            Source::Forwarded { trusted_proxies } => {
                let elements = forwarded_elements(request.headers());
                let element = nth_from_right(&elements, trusted_proxies)??;
                parse_node(&forwarded_for(element)?)?
            }
            Source::XForwardedForFrom(ref proxies) => {
                let peer = connection_ip(request)?;
                let entries = x_forwarded_for_entries(request.headers());
                proxies.client(peer, entries.iter().map(|entry| parse_node(entry)))
            }
            Source::ForwardedFrom(ref proxies) => {
                let peer = connection_ip(request)?;
                let elements = forwarded_elements(request.headers());
                proxies.client(
                    peer,
                    elements
                        .iter()
                        .map(|element| parse_node(&forwarded_for((*element)?)?)),
                )
            }
        };
        Some(self.normalize(ip))
    }
}

/// Why `extractor` can never find a key in requests to a service of type `service_type`,
/// with the fix; `Ok` when it can, or when this cannot tell. The one case it refuses: a
/// [`PeerIp`] reading the connection ([`PeerIp::new`], or zero trusted proxies) in front of
/// an axum service while the `axum` feature (`axum_feature`) is off, so that axum's
/// `ConnectInfo` is never read. An extractor of another type, or one that wraps a `PeerIp`,
/// is never refused (no false alarms); a service type that names no axum path either.
pub(crate) fn unreadable_connection(
    extractor: &dyn Any,
    service_type: &str,
    axum_feature: bool,
) -> Result<(), String> {
    let reads_connection = extractor
        .downcast_ref::<PeerIp>()
        .is_some_and(|peer| peer.source.reads_connection());
    if axum_feature || !reads_connection || !names_axum(service_type) {
        return Ok(());
    }
    Err(format!(
        "slidelimit-tower: PeerIp::new() reads the connection's address, but this crate's \
         `axum` feature is off, so it can never read axum's ConnectInfo and every request to \
         this axum service ({service_type}) would be refused with 400 (no rate-limit key). \
         Turn the feature on (`slidelimit-tower = {{ version = \"...\", features = \
         [\"axum\"] }}`) and serve with `into_make_service_with_connect_info::<SocketAddr>()`; \
         or, if your own middleware inserts `PeerAddr`, use `PeerIp::from_peer_addr()`"
    ))
}

/// Whether a type's name (`std::any::type_name`) has a path of the `axum` crate in it:
/// `axum::routing::route::Route<…>`, or an axum type among a wrapper's parameters (not
/// `myaxum::…`).
fn names_axum(type_name: &str) -> bool {
    type_name
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .any(|path| path.starts_with("axum::"))
}

/// The connection's remote IP, from the extensions the server filled in.
fn connection_ip<B>(request: &Request<B>) -> Option<IpAddr> {
    if let Some(PeerAddr(addr)) = request.extensions().get::<PeerAddr>() {
        return Some(addr.ip());
    }
    #[cfg(feature = "axum")]
    if let Some(axum::extract::ConnectInfo(addr)) = request
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
    {
        return Some(addr.ip());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn request(headers: &[(&str, &str)], peer: Option<&str>) -> Request<()> {
        let mut builder = Request::builder();
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let mut request = builder.body(()).unwrap();
        if let Some(peer) = peer {
            request
                .extensions_mut()
                .insert(PeerAddr(peer.parse().unwrap()));
        }
        request
    }

    #[test]
    fn nodes_in_every_written_form() {
        assert_eq!(parse_node("192.0.2.1"), Some(ip("192.0.2.1")));
        assert_eq!(parse_node("192.0.2.1:8080"), Some(ip("192.0.2.1")));
        assert_eq!(parse_node("2001:db8::1"), Some(ip("2001:db8::1")));
        assert_eq!(parse_node("[2001:db8::1]"), Some(ip("2001:db8::1")));
        assert_eq!(parse_node("[2001:db8::1]:443"), Some(ip("2001:db8::1")));
        assert_eq!(parse_node("[2001:db8::1]:_p1"), Some(ip("2001:db8::1")));
        assert_eq!(parse_node("unknown"), None);
        assert_eq!(parse_node("_hidden"), None);
        assert_eq!(parse_node("[2001:db8::1]x"), None);
        assert_eq!(parse_node("192.0.2.1:"), None);
        assert_eq!(parse_node("192.0.2.1:80:80"), None);
        assert_eq!(parse_node(""), None);
    }

    #[test]
    fn x_forwarded_for_counts_from_the_right_across_lines() {
        let r = request(
            &[
                ("x-forwarded-for", "1.1.1.1, 2.2.2.2"),
                ("x-forwarded-for", "3.3.3.3"),
            ],
            None,
        );
        assert_eq!(PeerIp::x_forwarded_for(1).extract(&r), Some(ip("3.3.3.3")));
        assert_eq!(PeerIp::x_forwarded_for(2).extract(&r), Some(ip("2.2.2.2")));
        assert_eq!(PeerIp::x_forwarded_for(3).extract(&r), Some(ip("1.1.1.1")));
        assert_eq!(PeerIp::x_forwarded_for(4).extract(&r), None);
        assert_eq!(PeerIp::forwarded(1).extract(&r), None, "the other header");
    }

    #[test]
    fn a_forged_entry_on_the_left_does_not_move_the_key() {
        // The client sent "X-Forwarded-For: 9.9.9.9"; our one proxy appended its peer.
        let r = request(&[("x-forwarded-for", "9.9.9.9,5.5.5.5")], None);
        assert_eq!(PeerIp::x_forwarded_for(1).extract(&r), Some(ip("5.5.5.5")));
    }

    #[test]
    fn forwarded_elements_and_quoting() {
        let r = request(
            &[(
                "forwarded",
                r#"for=192.0.2.43;proto=https, For="[2001:db8:cafe::17]:4711";by=_p, for=unknown"#,
            )],
            None,
        );
        assert_eq!(PeerIp::forwarded(1).extract(&r), None, "unknown is no IP");
        assert_eq!(
            PeerIp::forwarded(2).extract(&r),
            Some(ip("2001:db8:cafe::17"))
        );
        assert_eq!(PeerIp::forwarded(3).extract(&r), Some(ip("192.0.2.43")));
        let r = request(&[("forwarded", "proto=http;by=203.0.113.1")], None);
        assert_eq!(PeerIp::forwarded(1).extract(&r), None, "no for= pair");
        // A comma inside a quoted value does not split the element.
        let r = request(&[("forwarded", r#"for="1.2.3.4", for="x,y""#)], None);
        assert_eq!(PeerIp::forwarded(2).extract(&r), Some(ip("1.2.3.4")));
    }

    #[test]
    fn connection_address_and_zero_proxies() {
        let r = request(&[("x-forwarded-for", "1.1.1.1")], Some("10.1.2.3:9"));
        assert_eq!(PeerIp::new().extract(&r), Some(ip("10.1.2.3")));
        assert_eq!(PeerIp::x_forwarded_for(0).extract(&r), Some(ip("10.1.2.3")));
        assert_eq!(PeerIp::forwarded(0).extract(&r), Some(ip("10.1.2.3")));
        assert_eq!(PeerIp::new().extract(&request(&[], None)), None);
    }

    #[test]
    fn mapped_ipv4_and_ipv6_prefixes() {
        let r = request(&[], Some("[::ffff:192.0.2.7]:80"));
        assert_eq!(
            PeerIp::new().ipv6_prefix(64).extract(&r),
            Some(ip("192.0.2.7"))
        );
        let r = request(&[], Some("[2001:db8:aa:bbcc:cc:dd:ee:ff]:80"));
        assert_eq!(
            PeerIp::new().extract(&r),
            Some(ip("2001:db8:aa:bbcc:cc:dd:ee:ff"))
        );
        assert_eq!(
            PeerIp::new().ipv6_prefix(56).extract(&r),
            Some(ip("2001:db8:aa:bb00::"))
        );
        assert_eq!(
            PeerIp::new().ipv6_prefix(0).extract(&r),
            Some(ip("::")),
            "/0: one key for all of IPv6"
        );
        assert_eq!(
            PeerIp::new().ipv6_prefix(200).extract(&r),
            PeerIp::new().extract(&r)
        );
    }

    #[test]
    fn from_peer_addr_reads_only_peer_addr() {
        let r = request(&[("x-forwarded-for", "1.1.1.1")], Some("10.1.2.3:9"));
        assert_eq!(PeerIp::from_peer_addr().extract(&r), Some(ip("10.1.2.3")));
        let mut r = request(&[], None);
        r.extensions_mut().insert(axum::extract::ConnectInfo(
            "10.9.9.9:1".parse::<SocketAddr>().unwrap(),
        ));
        assert_eq!(
            PeerIp::new().extract(&r),
            Some(ip("10.9.9.9")),
            "feature on"
        );
        assert_eq!(
            PeerIp::from_peer_addr().extract(&r),
            None,
            "never ConnectInfo"
        );
    }

    #[test]
    fn names_axum_finds_the_crate_anywhere_in_a_type() {
        assert!(names_axum(std::any::type_name::<axum::routing::Route>()));
        assert!(names_axum(std::any::type_name::<axum::Router>()));
        assert!(names_axum(
            "tower_http::trace::Trace<axum::routing::Router, X>"
        ));
        assert!(names_axum("Wrap<alloc::sync::Arc<axum::routing::Route>>"));
        assert!(!names_axum("myaxum::Service"));
        assert!(!names_axum("tower::util::ServiceFn<app::handler>"));
        assert!(!names_axum("axum_like::Route"));
    }

    /// Every case of the start-up check: only `PeerIp` reading the connection, in front of an
    /// axum service, without the feature (tests build the crate with it, so the feature is a
    /// parameter here).
    #[test]
    fn the_connection_is_unreadable_only_for_axum_without_the_feature() {
        let axum_route = std::any::type_name::<axum::routing::Route>();
        let refused = unreadable_connection(&PeerIp::new(), axum_route, false).unwrap_err();
        assert!(refused.contains("`axum` feature is off"), "{refused}");
        assert!(refused.contains("PeerIp::from_peer_addr()"), "{refused}");
        assert!(unreadable_connection(&PeerIp::x_forwarded_for(0), axum_route, false).is_err());
        // The feature on, another extractor or source, or a service that is not axum's: fine.
        assert_eq!(
            unreadable_connection(&PeerIp::new(), axum_route, true),
            Ok(())
        );
        for fine in [
            PeerIp::from_peer_addr(),
            PeerIp::x_forwarded_for(1),
            PeerIp::forwarded(2),
        ] {
            assert_eq!(unreadable_connection(&fine, axum_route, false), Ok(()));
        }
        assert_eq!(
            unreadable_connection(&crate::Path, axum_route, false),
            Ok(())
        );
        let plain = "tower::util::service_fn::ServiceFn<app::handler>";
        assert_eq!(unreadable_connection(&PeerIp::new(), plain, false), Ok(()));
        // The trusted-proxy forms start from the connection too.
        let proxies = TrustedProxies::new(["10.0.0.0/8"]).unwrap();
        for refused in [
            PeerIp::x_forwarded_for_from(proxies.clone()),
            PeerIp::forwarded_from(proxies),
        ] {
            assert!(unreadable_connection(&refused, axum_route, false).is_err());
        }
    }

    fn proxies() -> TrustedProxies {
        TrustedProxies::new(["10.0.0.0/8", "2001:db8:ffff::/48"]).unwrap()
    }

    #[test]
    fn trusted_x_forwarded_for_counts_only_from_a_trusted_peer() {
        let key = PeerIp::x_forwarded_for_from(proxies());
        let header = [("x-forwarded-for", "6.6.6.6, 203.0.113.9")];
        // Directly from a client: its own address, whatever it wrote.
        let direct = request(&header, Some("198.51.100.4:5000"));
        assert_eq!(key.extract(&direct), Some(ip("198.51.100.4")));
        // Through a trusted proxy: the rightmost untrusted entry.
        let proxied = request(&header, Some("10.0.0.2:41000"));
        assert_eq!(key.extract(&proxied), Some(ip("203.0.113.9")));
        // Several header lines, trusted hops among the entries, skipped.
        let r = request(
            &[
                ("x-forwarded-for", "6.6.6.6, 203.0.113.9"),
                ("x-forwarded-for", "10.0.0.7, [2001:db8:ffff::5]:443"),
            ],
            Some("[::ffff:10.0.0.3]:80"),
        );
        assert_eq!(key.extract(&r), Some(ip("203.0.113.9")));
        // No header, or only trusted entries: the leftmost trusted address.
        assert_eq!(
            key.extract(&request(&[], Some("10.0.0.2:1"))),
            Some(ip("10.0.0.2"))
        );
        let r = request(
            &[("x-forwarded-for", "10.1.1.1, 10.2.2.2")],
            Some("10.0.0.2:1"),
        );
        assert_eq!(key.extract(&r), Some(ip("10.1.1.1")));
        // An entry that is not an address stops the walk at the nearest trusted hop.
        let r = request(
            &[("x-forwarded-for", "203.0.113.9, unknown, 10.2.2.2")],
            Some("10.0.0.2:1"),
        );
        assert_eq!(key.extract(&r), Some(ip("10.2.2.2")));
        // A header that is not visible ASCII is ignored: the connection's address.
        let mut r = request(&[("x-forwarded-for", "203.0.113.9")], Some("10.0.0.2:1"));
        r.headers_mut().append(
            "x-forwarded-for",
            http::HeaderValue::from_bytes(b"2.2.2.2\xff").unwrap(),
        );
        assert_eq!(key.extract(&r), Some(ip("10.0.0.2")));
        // No connection address: no key.
        assert_eq!(key.extract(&request(&header, None)), None);
    }

    #[test]
    fn trusted_forwarded_walks_every_element_of_every_line() {
        let key = PeerIp::forwarded_from(proxies());
        let r = request(
            &[
                (
                    "forwarded",
                    r#"for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https"#,
                ),
                (
                    "forwarded",
                    "for=10.0.0.9;by=10.0.0.1, For=\"10.0.0.8:8080\"",
                ),
            ],
            Some("10.0.0.1:443"),
        );
        assert_eq!(key.extract(&r), Some(ip("2001:db8:cafe::17")));
        // An element without for= is not an address: the nearest trusted hop.
        let r = request(
            &[(
                "forwarded",
                "for=6.6.6.6, proto=http;by=10.0.0.5, for=10.0.0.4",
            )],
            Some("10.0.0.1:443"),
        );
        assert_eq!(key.extract(&r), Some(ip("10.0.0.4")));
        // The other header does not count.
        let r = request(&[("x-forwarded-for", "6.6.6.6")], Some("10.0.0.1:443"));
        assert_eq!(key.extract(&r), Some(ip("10.0.0.1")));
    }

    #[test]
    fn trusted_walks_combine_with_ipv6_prefixes() {
        let key = PeerIp::x_forwarded_for_from(proxies()).ipv6_prefix(64);
        let r = request(
            &[("x-forwarded-for", "2001:db8:1:2:aaaa::1, 2001:db8:ffff::9")],
            Some("10.0.0.2:1"),
        );
        assert_eq!(key.extract(&r), Some(ip("2001:db8:1:2::")));
        let r = request(
            &[("x-forwarded-for", "::ffff:203.0.113.9")],
            Some("10.0.0.2:1"),
        );
        assert_eq!(
            key.extract(&r),
            Some(ip("203.0.113.9")),
            "IPv4-mapped as IPv4"
        );
    }

    /// The reported bypass: trusted proxies 10.0.0.0/8, the connection from 10.0.0.2, and a
    /// client that sent a lone `"` before its proxy appended its address.
    #[test]
    fn a_lone_quote_does_not_swallow_the_entry_a_proxy_appended() {
        let key = PeerIp::x_forwarded_for_from(TrustedProxies::new(["10.0.0.0/8"]).unwrap());
        let r = request(
            &[("x-forwarded-for", "\", 198.51.100.23")],
            Some("10.0.0.2:41000"),
        );
        assert_eq!(key.extract(&r), Some(ip("198.51.100.23")));
        assert_eq!(
            PeerIp::x_forwarded_for(1).extract(&r),
            Some(ip("198.51.100.23"))
        );
    }

    #[test]
    fn x_forwarded_for_has_no_quoted_form() {
        let key = PeerIp::x_forwarded_for_from(TrustedProxies::new(["10.0.0.0/8"]).unwrap());
        for sent in [
            "\"",
            "\"9.9.9.9",
            "9.9.9.9\"",
            "\"9.9.9.9, 8.8.8.8",
            "for=\"9.9.9.9",
            "\"9.9.9.9\\",
        ] {
            // What the client sent, then what its proxy appended: the client's address.
            let header = format!("{sent}, 198.51.100.23");
            let r = request(&[("x-forwarded-for", &header)], Some("10.0.0.2:41000"));
            assert_eq!(key.extract(&r), Some(ip("198.51.100.23")), "{header}");
            assert_eq!(
                PeerIp::x_forwarded_for(1).extract(&r),
                Some(ip("198.51.100.23")),
                "{header}"
            );
            // ... and a second trusted proxy's hop after it, on the same line or the next.
            let header = format!("{header}, 10.0.0.7");
            let r = request(&[("x-forwarded-for", &header)], Some("10.0.0.2:41000"));
            assert_eq!(key.extract(&r), Some(ip("198.51.100.23")), "{header}");
            let r = request(
                &[
                    ("x-forwarded-for", &format!("{sent}, 198.51.100.23")),
                    ("x-forwarded-for", "10.0.0.7"),
                ],
                Some("10.0.0.2:41000"),
            );
            assert_eq!(key.extract(&r), Some(ip("198.51.100.23")), "{header}");
            assert_eq!(
                PeerIp::x_forwarded_for(2).extract(&r),
                Some(ip("198.51.100.23")),
                "{header}"
            );
        }
        // Quotes make no entry an address, nor join entries: each one counts on its own
        // (`"1.1.1.1` and `2.2.2.2"` are two entries, neither an address).
        let r = request(
            &[("x-forwarded-for", "\"1.1.1.1, 2.2.2.2\", 3.3.3.3")],
            None,
        );
        assert_eq!(PeerIp::x_forwarded_for(1).extract(&r), Some(ip("3.3.3.3")));
        assert_eq!(PeerIp::x_forwarded_for(2).extract(&r), None);
        assert_eq!(PeerIp::x_forwarded_for(3).extract(&r), None);
        assert_eq!(PeerIp::x_forwarded_for(4).extract(&r), None, "3 entries");
        // A quoted entry left of a trusted hop still stops the walk there.
        let r = request(
            &[("x-forwarded-for", "203.0.113.9, \"9.9.9.9\", 10.0.0.1")],
            Some("10.0.0.2:1"),
        );
        assert_eq!(key.extract(&r), Some(ip("10.0.0.1")));
    }

    #[test]
    fn empty_list_elements_are_skipped() {
        let key = PeerIp::x_forwarded_for_from(proxies());
        for header in [
            "203.0.113.9,, 10.0.0.1",
            "203.0.113.9, 10.0.0.1,",
            "203.0.113.9 , ,\t, 10.0.0.1 , ",
            ",203.0.113.9,10.0.0.1",
        ] {
            let r = request(&[("x-forwarded-for", header)], Some("10.0.0.2:1"));
            assert_eq!(key.extract(&r), Some(ip("203.0.113.9")), "{header}");
            assert_eq!(
                PeerIp::x_forwarded_for(2).extract(&r),
                Some(ip("203.0.113.9")),
                "{header}"
            );
        }
        let r = request(&[("x-forwarded-for", "1.1.1.1,,2.2.2.2,")], None);
        assert_eq!(PeerIp::x_forwarded_for(1).extract(&r), Some(ip("2.2.2.2")));
        assert_eq!(PeerIp::x_forwarded_for(2).extract(&r), Some(ip("1.1.1.1")));
        assert_eq!(PeerIp::x_forwarded_for(3).extract(&r), None, "2 entries");
        // Empty lines and lines of commas hold no entry.
        let r = request(
            &[
                ("x-forwarded-for", "203.0.113.9"),
                ("x-forwarded-for", ""),
                ("x-forwarded-for", " , "),
                ("x-forwarded-for", "10.0.0.1"),
            ],
            Some("10.0.0.2:1"),
        );
        assert_eq!(key.extract(&r), Some(ip("203.0.113.9")));
        // The same for Forwarded.
        let key = PeerIp::forwarded_from(proxies());
        for header in [
            "for=203.0.113.9,, for=10.0.0.1",
            "for=203.0.113.9, for=10.0.0.1,",
            ",for=203.0.113.9 ,\t, for=\"10.0.0.1\" , ",
        ] {
            let r = request(&[("forwarded", header)], Some("10.0.0.2:1"));
            assert_eq!(key.extract(&r), Some(ip("203.0.113.9")), "{header}");
            assert_eq!(
                PeerIp::forwarded(2).extract(&r),
                Some(ip("203.0.113.9")),
                "{header}"
            );
        }
        // An empty piece inside a quoted string is the string's, not an empty element.
        let r = request(&[("forwarded", "for=1.1.1.1;x=\"a,,b\"")], None);
        assert_eq!(PeerIp::forwarded(1).extract(&r), Some(ip("1.1.1.1")));
    }

    #[test]
    fn an_unbalanced_quote_in_forwarded_costs_only_its_own_element() {
        let key = PeerIp::forwarded_from(TrustedProxies::new(["10.0.0.0/8"]).unwrap());
        for sent in [
            "\"",
            "for=\"",
            "for=\"9.9.9.9",
            "for=9.9.9.9\"",
            "for=9.9.9.9;x=\"",
            "for=\"9.9.9.9\\",
            "for=\"[2001:db8::9]:80",
            "for=\"9.9.9.9, by=\"x",
        ] {
            for appended in [
                "for=198.51.100.23",
                "for=\"198.51.100.23:4711\";proto=https",
                "For=\"198.51.100.23\";host=\"a,b\"",
                // Quoted `;` and `,`: what a client's open quote to the left could close on.
                "for=198.51.100.23;ext=\";a=b, c\"",
            ] {
                // The client sent `sent`; its proxy appended `appended` on the same line.
                let header = format!("{sent}, {appended}");
                let r = request(&[("forwarded", &header)], Some("10.0.0.2:443"));
                assert_eq!(key.extract(&r), Some(ip("198.51.100.23")), "{header}");
                assert_eq!(
                    PeerIp::forwarded(1).extract(&r),
                    Some(ip("198.51.100.23")),
                    "{header}"
                );
                // ... then a second trusted proxy its own hop, on the same line or the next.
                let header = format!("{header}, for=10.0.0.7");
                let r = request(&[("forwarded", &header)], Some("10.0.0.2:443"));
                assert_eq!(key.extract(&r), Some(ip("198.51.100.23")), "{header}");
                assert_eq!(
                    PeerIp::forwarded(2).extract(&r),
                    Some(ip("198.51.100.23")),
                    "{header}"
                );
                let r = request(
                    &[("forwarded", sent), ("forwarded", appended)],
                    Some("10.0.0.2:443"),
                );
                assert_eq!(key.extract(&r), Some(ip("198.51.100.23")), "{header}");
            }
        }
        // The malformed element is one element, not an address: left of a trusted hop it
        // stops the walk there, and it counts once.
        let r = request(
            &[("forwarded", "for=203.0.113.9, for=\"9.9.9.9, for=10.0.0.1")],
            Some("10.0.0.2:1"),
        );
        assert_eq!(key.extract(&r), Some(ip("10.0.0.1")));
        assert_eq!(PeerIp::forwarded(1).extract(&r), Some(ip("10.0.0.1")));
        assert_eq!(PeerIp::forwarded(2).extract(&r), None);
        assert_eq!(PeerIp::forwarded(3).extract(&r), Some(ip("203.0.113.9")));
        // A balanced quoted string still spans commas, escapes included.
        let r = request(
            &[(
                "forwarded",
                r#"for="[2001:db8::1]";x="a,\"b,c", for=1.1.1.1"#,
            )],
            None,
        );
        assert_eq!(PeerIp::forwarded(1).extract(&r), Some(ip("1.1.1.1")));
        assert_eq!(PeerIp::forwarded(2).extract(&r), Some(ip("2001:db8::1")));
        assert_eq!(PeerIp::forwarded(3).extract(&r), None, "2 elements");
    }

    /// Every address a header line could name, however it were split: the text between two
    /// commas or semicolons, after its last `=`, without whitespace, quotes and backslashes.
    /// A superset of what any split of the line finds, and independent of the one under test.
    fn addresses_written(line: &str) -> Vec<IpAddr> {
        line.split([',', ';'])
            .filter_map(|part| {
                let value = part.rsplit('=').next().unwrap_or(part);
                let node: String = value
                    .chars()
                    .filter(|c| !matches!(c, ' ' | '\t' | '"' | '\\'))
                    .collect();
                parse_node(&node)
            })
            .collect()
    }

    /// Forwarding header lines a client may send: elements of bytes that matter to the
    /// split (quotes, backslashes, commas, semicolons, whitespace), empty elements, and
    /// unbalanced quotes in the forms that broke it.
    fn client_lines() -> impl proptest::strategy::Strategy<Value = Vec<String>> {
        use proptest::prelude::*;
        let element = prop_oneof![
            "[0-9a-f:.\\[\\], ;=\"\\\\\t_forunkwn]{0,16}",
            Just(String::new()),
            Just("\"".to_owned()),
            Just("\"9.9.9.9".to_owned()),
            Just("9.9.9.9\"".to_owned()),
            Just("9.9.9.9".to_owned()),
            Just("for=\"9.9.9.9".to_owned()),
            Just("for=9.9.9.9\"".to_owned()),
            Just("for=9.9.9.9;x=\"".to_owned()),
            Just("for=\"9.9.9.9\\".to_owned()),
            Just("for=\"[2001:db8::9]:80".to_owned()),
            Just("for=9.9.9.9".to_owned()),
        ];
        proptest::collection::vec(
            proptest::collection::vec(element, 0..4).prop_map(|elements| elements.join(",")),
            0..3,
        )
    }

    /// A client's own address, untrusted: IPv4 or IPv6.
    fn client_address() -> impl proptest::strategy::Strategy<Value = IpAddr> {
        use proptest::prelude::*;
        prop_oneof![
            any::<u8>().prop_map(|x| IpAddr::from([203, 0, 113, x])),
            any::<u16>().prop_map(|x| IpAddr::from([0x2001, 0xdb8, 1, 0, 0, 0, 0, x])),
        ]
    }

    /// `ip` as a proxy writes it in `X-Forwarded-For`, in written form `form`.
    fn x_forwarded_for_node(ip: IpAddr, form: u8) -> String {
        match (ip, form % 3) {
            (IpAddr::V4(v4), 0 | 1) => v4.to_string(),
            (IpAddr::V4(v4), _) => format!("{v4}:4711"),
            (IpAddr::V6(v6), 0) => v6.to_string(),
            (IpAddr::V6(v6), 1) => format!("[{v6}]"),
            (IpAddr::V6(v6), _) => format!("[{v6}]:4711"),
        }
    }

    /// A well-formed `Forwarded` element for `ip`, in written form `form`: quoted or not,
    /// with a port, other pairs before or after, whitespace, and quoted strings that hold
    /// commas and semicolons.
    fn forwarded_element(ip: IpAddr, form: u8) -> String {
        let node = match (ip, form % 4) {
            (IpAddr::V4(v4), 0) => v4.to_string(),
            (IpAddr::V4(v4), 1) => format!("\"{v4}\""),
            (IpAddr::V4(v4), _) => format!("\"{v4}:4711\""),
            (IpAddr::V6(v6), 0 | 1) => format!("\"[{v6}]\""),
            (IpAddr::V6(v6), _) => format!("\"[{v6}]:_p1\""),
        };
        match form / 4 % 6 {
            0 => format!("for={node}"),
            1 => format!("For={node};proto=https"),
            2 => format!("by=\"[2001:db8:ffff::1]\" ; for={node}"),
            3 => format!("for={node};host=\"a,b\""),
            4 => format!("for={node};ext=\";a=b, c\\\"\""),
            // A piece inside the string that would be a whole element on its own.
            _ => format!("for={node};note=\"x, for=9.9.9.9, \\\\\""),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// No header bytes make any extractor panic, and a trusted walk's answer is the
        /// connection's address or an address written in the header.
        #[test]
        fn no_header_bytes_crash_the_walk(
            lines in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48), 0..4),
            text in "[0-9a-fA-F:.\\[\\], ;=\"\\\\\t_forunkwn]{0,64}",
            peer_trusted in proptest::prelude::any::<bool>(),
        ) {
            let peer = if peer_trusted { "10.0.0.2:1" } else { "198.51.100.4:2" };
            let mut r = request(&[], Some(peer));
            let mut written = Vec::new();
            for name in ["x-forwarded-for", "forwarded"] {
                for bytes in lines.iter().map(Vec::as_slice).chain([text.as_bytes()]) {
                    if let Ok(value) = http::HeaderValue::from_bytes(bytes) {
                        if let Ok(text) = value.to_str() {
                            written.extend(addresses_written(text));
                        }
                        r.headers_mut().append(name, value);
                    }
                }
            }
            for key in [
                PeerIp::x_forwarded_for_from(proxies()),
                PeerIp::forwarded_from(proxies()).ipv6_prefix(48),
            ] {
                let Some(found) = key.extract(&r) else {
                    proptest::prop_assert!(false, "a connection address always gives a key");
                    return Ok(());
                };
                let from_header = written.iter().any(|&ip| key.normalize(ip) == found);
                proptest::prop_assert!(
                    found == ip(&peer[..peer.find(':').unwrap()]) || from_header,
                    "{found} is neither the peer nor in the header"
                );
                if !peer_trusted {
                    proptest::prop_assert_eq!(found, ip("198.51.100.4"));
                }
            }
            for key in [PeerIp::x_forwarded_for(2), PeerIp::forwarded(1)] {
                let _ = key.extract(&r);
            }
        }

        /// Whatever a client sends in either header (quotes, empty elements, unbalanced
        /// `Forwarded` values), through 1 to 3 trusted proxies that each append the address
        /// they got the request from, the key is the address the first proxy appended: the
        /// client's own, never one it chose. Both forms, by address and by count.
        #[test]
        fn the_key_is_what_the_trusted_proxies_appended(
            sent_x_forwarded_for in client_lines(),
            sent_forwarded in client_lines(),
            client in client_address(),
            // Each proxy: its own address (IPv4 or IPv6), the written form of what it
            // appends, and whether it appends to the last line or adds one.
            hops in proptest::collection::vec(
                (proptest::prelude::any::<bool>(), 0u8..24, proptest::prelude::any::<bool>()),
                1..4,
            ),
        ) {
            let hop_ip = |index: usize, v6: bool| -> IpAddr {
                let index = u8::try_from(index + 1).unwrap();
                if v6 {
                    IpAddr::from([0x2001, 0xdb8, 0xffff, 0, 0, 0, 0, u16::from(index)])
                } else {
                    IpAddr::from([10, 0, 0, index])
                }
            };
            let (mut x_forwarded_for, mut forwarded) = (sent_x_forwarded_for, sent_forwarded);
            let mut from = client;
            for (index, &(v6, form, new_line)) in hops.iter().enumerate() {
                for (lines, written) in [
                    (&mut x_forwarded_for, x_forwarded_for_node(from, form)),
                    (&mut forwarded, forwarded_element(from, form)),
                ] {
                    match lines.last_mut() {
                        Some(last) if !new_line => *last = format!("{last}, {written}"),
                        _ => lines.push(written),
                    }
                }
                from = hop_ip(index, v6);
            }
            // The connection comes from the last proxy.
            let peer = SocketAddr::new(from, 443).to_string();
            let mut r = request(&[], Some(&peer));
            for (name, lines) in [("x-forwarded-for", &x_forwarded_for), ("forwarded", &forwarded)] {
                for line in lines {
                    r.headers_mut().append(name, http::HeaderValue::from_str(line).unwrap());
                }
            }
            let n = hops.len();
            for key in [
                PeerIp::x_forwarded_for_from(proxies()),
                PeerIp::x_forwarded_for(n),
                PeerIp::forwarded_from(proxies()),
                PeerIp::forwarded(n),
            ] {
                proptest::prop_assert_eq!(
                    key.extract(&r),
                    Some(client),
                    "{:?}: x-forwarded-for {:?}, forwarded {:?}",
                    key,
                    x_forwarded_for,
                    forwarded
                );
            }
        }
    }

    #[test]
    fn a_header_that_is_not_visible_ascii_is_not_trusted() {
        let mut r = request(&[("x-forwarded-for", "1.1.1.1")], None);
        r.headers_mut().append(
            "x-forwarded-for",
            http::HeaderValue::from_bytes(b"2.2.2.2\xff").unwrap(),
        );
        assert_eq!(PeerIp::x_forwarded_for(2).extract(&r), None);
    }
}
