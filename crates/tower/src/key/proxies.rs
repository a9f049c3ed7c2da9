//! Trusted proxies by address: the networks whose connections may name the client in a
//! forwarding header, and the right-to-left walk that finds the client behind them.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The addresses and networks of your reverse proxies (CIDR, IPv4 and IPv6).
///
/// A forwarding header counts only when the connection comes from one of them; the header is
/// then walked from the right, skipping every entry that is itself a trusted proxy, and the
/// first entry that is not is the client (see [`crate::PeerIp::x_forwarded_for_from`]).
///
/// Entries are `address/prefix` (`10.0.0.0/8`, `2001:db8::/32`) or a single address
/// (`192.0.2.7`, `::1`). Bits past the prefix are ignored (`10.1.2.3/8` is `10.0.0.0/8`).
/// IPv4-mapped IPv6 entries (`::ffff:10.0.0.0/104`) count as their IPv4 network, and
/// addresses are compared in that canonical form, so a proxy that connects over an IPv6
/// socket with a mapped address matches its IPv4 entry.
///
/// ```
/// use slidelimit_tower::key::TrustedProxies;
///
/// let proxies = TrustedProxies::new(["10.0.0.0/8", "2001:db8::/32", "192.0.2.7"])?;
/// assert!(proxies.contains("10.20.30.40".parse()?));
/// assert!(proxies.contains("::ffff:10.0.0.1".parse()?), "IPv4-mapped");
/// assert!(proxies.contains("2001:db8:ff::1".parse()?));
/// assert!(!proxies.contains("192.0.2.8".parse()?));
/// assert!(TrustedProxies::new(["10.0.0.0/33"]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedProxies {
    networks: Arc<[Network]>,
}

/// One trusted network: its address with the bits past the prefix cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Network {
    V4 { base: u32, prefix: u8 },
    V6 { base: u128, prefix: u8 },
}

/// Why a trusted-proxy entry was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyListError {
    /// The part before `/` is not an IPv4 or IPv6 address.
    NotAnAddress {
        /// The entry as given.
        entry: String,
    },
    /// The prefix is not a number of bits the address has (0–32 for IPv4, 0–128 for IPv6).
    BadPrefix {
        /// The entry as given.
        entry: String,
    },
}

impl fmt::Display for ProxyListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnAddress { entry } => write!(
                f,
                "trusted proxy `{entry}`: not an IP address or network (write 10.0.0.0/8, \
                 2001:db8::/32 or a single address)"
            ),
            Self::BadPrefix { entry } => write!(
                f,
                "trusted proxy `{entry}`: the prefix must be 0-32 bits for IPv4, 0-128 for IPv6"
            ),
        }
    }
}

impl std::error::Error for ProxyListError {}

impl TrustedProxies {
    /// The networks of `entries` (see the type's docs for their forms).
    ///
    /// # Errors
    /// The first entry that is not an address or network.
    pub fn new<I, S>(entries: I) -> Result<Self, ProxyListError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let networks = entries
            .into_iter()
            .map(|entry| Network::parse(entry.as_ref().trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            networks: networks.into(),
        })
    }

    /// Whether `ip` is in one of the networks (IPv4-mapped addresses as IPv4).
    #[must_use]
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.networks.iter().any(|network| network.contains(ip))
    }

    /// The client behind the proxies: `peer` (the connection's address) if it is not
    /// trusted; otherwise the header's entries walked from the right (`entries` in header
    /// order), skipping trusted ones, to the first that is not. An entry that is not an
    /// address (`unknown`, an obfuscated node) stops the walk at the nearest trusted hop; a
    /// header of trusted entries only gives its leftmost.
    pub(crate) fn client<'a>(
        &self,
        peer: IpAddr,
        entries: impl DoubleEndedIterator<Item = Option<IpAddr>> + 'a,
    ) -> IpAddr {
        let mut client = peer.to_canonical();
        if !self.contains(client) {
            return client;
        }
        for entry in entries.rev() {
            let Some(ip) = entry else {
                return client;
            };
            client = ip.to_canonical();
            if !self.contains(client) {
                return client;
            }
        }
        client
    }
}

impl Network {
    fn parse(entry: &str) -> Result<Self, ProxyListError> {
        let (address, prefix) = match entry.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (entry, None),
        };
        let address: IpAddr = address.parse().map_err(|_| ProxyListError::NotAnAddress {
            entry: entry.to_owned(),
        })?;
        let bad_prefix = || ProxyListError::BadPrefix {
            entry: entry.to_owned(),
        };
        let prefix = match prefix {
            None => None,
            Some(bits) if bits.bytes().all(|b| b.is_ascii_digit()) && !bits.is_empty() => {
                Some(bits.parse::<u8>().map_err(|_| bad_prefix())?)
            }
            Some(_) => return Err(bad_prefix()),
        };
        match address {
            IpAddr::V4(v4) => Self::v4(v4, prefix.unwrap_or(32)).ok_or_else(bad_prefix),
            IpAddr::V6(v6) => match (v6.to_ipv4_mapped(), prefix.unwrap_or(128)) {
                // An IPv4-mapped network of at least the mapping's 96 bits is an IPv4 one.
                (Some(v4), bits) if bits >= 96 => Self::v4(v4, bits - 96).ok_or_else(bad_prefix),
                (_, bits) => Self::v6(v6, bits).ok_or_else(bad_prefix),
            },
        }
    }

    fn v4(address: Ipv4Addr, prefix: u8) -> Option<Self> {
        (prefix <= 32).then(|| Self::V4 {
            base: u32::from(address) & mask_u32(prefix),
            prefix,
        })
    }

    fn v6(address: Ipv6Addr, prefix: u8) -> Option<Self> {
        (prefix <= 128).then(|| Self::V6 {
            base: u128::from(address) & mask_u128(prefix),
            prefix,
        })
    }

    /// Whether `ip` (already canonical) is in this network.
    fn contains(self, ip: IpAddr) -> bool {
        match (self, ip) {
            (Self::V4 { base, prefix }, IpAddr::V4(v4)) => u32::from(v4) & mask_u32(prefix) == base,
            (Self::V6 { base, prefix }, IpAddr::V6(v6)) => {
                u128::from(v6) & mask_u128(prefix) == base
            }
            _ => false,
        }
    }
}

/// The first `prefix` bits set (`prefix` at most 32).
fn mask_u32(prefix: u8) -> u32 {
    // checked_shl: a shift by 32 (a /0 prefix) keeps nothing.
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

/// The first `prefix` bits set (`prefix` at most 128).
fn mask_u128(prefix: u8) -> u128 {
    // checked_shl: a shift by 128 (a /0 prefix) keeps nothing.
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn networks_in_every_form() {
        let proxies = TrustedProxies::new([
            "10.0.0.0/8",
            " 192.0.2.7 ",
            "2001:db8::/32",
            "::1",
            "::ffff:172.16.0.0/108",
            "198.51.100.77/24",
        ])
        .unwrap();
        for inside in [
            "10.0.0.0",
            "10.255.255.255",
            "192.0.2.7",
            "2001:db8::",
            "2001:db8:ffff:ffff::1",
            "::1",
            "172.16.0.1",
            "172.31.255.255",
            "::ffff:172.20.1.1",
            "::ffff:10.9.8.7",
            "198.51.100.1",
        ] {
            assert!(proxies.contains(ip(inside)), "{inside}");
        }
        for outside in [
            "11.0.0.0",
            "192.0.2.8",
            "2001:db9::",
            "::2",
            "172.32.0.0",
            "198.51.101.1",
            "::ffff:11.0.0.1",
        ] {
            assert!(!proxies.contains(ip(outside)), "{outside}");
        }
    }

    #[test]
    fn zero_prefixes_take_every_address_of_their_family() {
        let v4 = TrustedProxies::new(["0.0.0.0/0"]).unwrap();
        assert!(v4.contains(ip("203.0.113.1")));
        assert!(!v4.contains(ip("2001:db8::1")));
        let v6 = TrustedProxies::new(["::/0"]).unwrap();
        assert!(v6.contains(ip("2001:db8::1")));
        assert!(
            !v6.contains(ip("203.0.113.1")),
            "IPv4 is canonical, not ::ffff:"
        );
    }

    #[test]
    fn bad_entries_are_typed_errors() {
        for (entry, error) in [
            ("10.0.0.0/33", "BadPrefix"),
            ("2001:db8::/129", "BadPrefix"),
            ("10.0.0.0/", "BadPrefix"),
            ("10.0.0.0/+8", "BadPrefix"),
            ("10.0.0.0/8/8", "BadPrefix"),
            ("10.0.0.0/300", "BadPrefix"),
            ("::ffff:10.0.0.0/129", "BadPrefix"),
            ("localhost", "NotAnAddress"),
            ("10.0.0/8", "NotAnAddress"),
            ("", "NotAnAddress"),
        ] {
            let got = TrustedProxies::new([entry]).unwrap_err();
            assert!(format!("{got:?}").starts_with(error), "{entry}: {got:?}");
            assert!(got.to_string().contains(entry.trim()), "{got}");
        }
    }

    #[test]
    fn the_walk_stops_at_the_first_untrusted_entry_from_the_right() {
        let proxies = TrustedProxies::new(["10.0.0.0/8"]).unwrap();
        let walk = |peer: &str, entries: &[&str]| {
            proxies.client(ip(peer), entries.iter().map(|e| e.parse::<IpAddr>().ok()))
        };
        assert_eq!(
            walk("203.0.113.5", &["1.1.1.1"]),
            ip("203.0.113.5"),
            "untrusted peer"
        );
        assert_eq!(walk("10.0.0.1", &["6.6.6.6", "1.1.1.1"]), ip("1.1.1.1"));
        assert_eq!(
            walk("10.0.0.1", &["6.6.6.6", "1.1.1.1", "10.0.0.2"]),
            ip("1.1.1.1"),
            "a trusted hop skipped"
        );
        assert_eq!(walk("10.0.0.1", &["10.0.0.3", "10.0.0.2"]), ip("10.0.0.3"));
        assert_eq!(walk("10.0.0.1", &[]), ip("10.0.0.1"), "no header");
        assert_eq!(
            walk("10.0.0.1", &["1.1.1.1", "unknown", "10.0.0.2"]),
            ip("10.0.0.2"),
            "not an address: the nearest trusted hop"
        );
        assert_eq!(walk("::ffff:10.0.0.1", &["::ffff:1.2.3.4"]), ip("1.2.3.4"));
    }
}
