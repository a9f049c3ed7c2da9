//! TLS (`rediss://`) for the blocking limiters, with the feature `tls`: the [`Tls`] options
//! (whose certificates to trust, which client certificate to show) and the encrypted stream
//! a pooled connection speaks RESP over. The async limiter (feature `tokio`) reads the same
//! options and hands them to the `redis` crate's own rustls client
//! (`Settings::async_client`), whose handshake its connecting task's timeout bounds.
//!
//! # One socket wait at a time
//! The pool (`src/pool.rs`) bounds every call by one deadline by never letting one socket
//! wait last more than its short slice. rustls' own `StreamOwned` cannot keep that promise:
//! its reads and its handshake loop over the socket until a whole record is in, so a server
//! that trickles bytes would hold a call past its deadline. The [`TlsStream`] here does at
//! most one socket read or write per step instead, and answers
//! [`io::ErrorKind::Interrupted`] when it made progress but has nothing for its caller yet:
//! the pool's wait loop then looks at the deadline and steps again. The handshake runs the
//! same way, inside the deadline of the call that opens the connection.
//!
//! # What is checked
//! The server's certificate chain, against the system's roots (`rustls-native-certs`) or
//! the CA the user gives ([`Tls::ca_pem`]), and its name: the URL's host, a DNS name or an
//! IP address. There is no way to turn the checks off (`rediss://…/#insecure` is refused):
//! a server with a private CA is reached by giving that CA. rustls' `ring` provider, TLS 1.3
//! and 1.2.

use std::borrow::Cow;

use crate::Error;

#[cfg(feature = "tls")]
pub use enabled::Tls;
#[cfg(feature = "tls")]
pub(crate) use enabled::{Connector, Settings, TlsStream};

/// Without the feature nothing can make a TLS connection: these stand in for the feature's
/// types in the pool, uninhabited, so that the pool needs no `cfg` of its own.
#[cfg(not(feature = "tls"))]
pub(crate) use disabled::{Connector, Settings, TlsStream};

/// The TLS options a limiter was given ([`crate::Options::tls`]): with the feature `tls`,
/// maybe a [`Tls`]; without it, nothing can be given.
#[derive(Clone, Debug, Default)]
pub(crate) struct TlsChoice(#[cfg(feature = "tls")] pub(crate) Option<Tls>);

impl TlsChoice {
    /// The choice of `tls`.
    #[cfg(feature = "tls")]
    pub(crate) const fn given(tls: Tls) -> Self {
        Self(Some(tls))
    }
}

/// Reads the scheme of `url`: for `rediss://` (or `valkeys://`), the URL as `redis`'s parser
/// takes it without its TLS features (scheme `redis://`, same host, port, credentials and
/// database) and the TLS settings to connect with: the [`Tls`] given, or the
/// system's roots. Any other URL comes back as it is, with none.
///
/// # Errors
/// [`Error::Config`]: `rediss://` without the feature `tls`, a `#insecure` (or any other)
/// fragment, no usable system roots, or a [`Tls`] given for a URL that is not `rediss://`
/// (a user who configured TLS and forgot the scheme would otherwise send in plain text).
pub(crate) fn scheme<'a>(
    url: &'a str,
    given: &TlsChoice,
) -> Result<(Cow<'a, str>, Option<Settings>), Error> {
    let secure = url.split_once("://").and_then(|(scheme, rest)| {
        (scheme.eq_ignore_ascii_case("rediss") || scheme.eq_ignore_ascii_case("valkeys"))
            .then_some(rest)
    });
    let Some(rest) = secure else {
        #[cfg(feature = "tls")]
        if given.0.is_some() {
            return Err(Error::Config(
                "TLS options were given, but the URL does not start with `rediss://`".to_owned(),
            ));
        }
        return Ok((Cow::Borrowed(url), None));
    };
    #[cfg(not(feature = "tls"))]
    {
        let _ = (rest, given);
        Err(Error::Config(
            "a `rediss://` URL (TLS) needs the slidelimit-redis feature `tls`".to_owned(),
        ))
    }
    #[cfg(feature = "tls")]
    {
        if let Some((_, fragment)) = rest.split_once('#') {
            return Err(Error::Config(format!(
                "`rediss://` URL with the fragment `#{fragment}`: certificate checks cannot be \
                 turned off; give the server's CA with `Tls::ca_pem` instead"
            )));
        }
        let tls = match &given.0 {
            Some(tls) => tls.clone(),
            None => Tls::system_roots()?,
        };
        Ok((Cow::Owned(format!("redis://{rest}")), Some(tls.settings())))
    }
}

#[cfg(not(feature = "tls"))]
mod disabled {
    use std::io;
    use std::net::TcpStream;

    use crate::Error;

    /// Never made: see [`super::scheme`].
    #[derive(Debug)]
    pub(crate) enum Settings {}

    /// Never made: see [`super::scheme`].
    #[derive(Debug)]
    pub(crate) enum Connector {}

    /// Never made: see [`super::scheme`].
    pub(crate) enum TlsStream {}

    impl Settings {
        pub(crate) fn connector(&self, _host: &str) -> Result<Connector, Error> {
            match *self {}
        }
        #[cfg(feature = "tokio")]
        pub(crate) fn async_client(
            &self,
            _info: redis::ConnectionInfo,
        ) -> Result<redis::Client, Error> {
            match *self {}
        }
    }

    impl Connector {
        pub(crate) fn start(&self, _tcp: TcpStream) -> Result<TlsStream, Error> {
            match *self {}
        }
    }

    impl TlsStream {
        pub(crate) fn socket(&self) -> &TcpStream {
            match *self {}
        }
        pub(crate) fn is_open(&mut self) -> bool {
            match *self {}
        }
        pub(crate) fn handshake_step(&mut self) -> io::Result<usize> {
            match *self {}
        }
        pub(crate) fn read_step(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
            match *self {}
        }
        pub(crate) fn write_step(&mut self, _buf: &[u8]) -> io::Result<usize> {
            match *self {}
        }
        pub(crate) fn flush_step(&mut self) -> io::Result<usize> {
            match *self {}
        }
    }
}

#[cfg(feature = "tls")]
mod enabled {
    use std::fmt;
    use std::io::{self, Read, Write};
    use std::net::TcpStream;
    use std::sync::Arc;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use rustls::{ClientConfig, ClientConnection, RootCertStore};

    use crate::Error;

    /// How the blocking limiters ([`RedisLimiter`](crate::RedisLimiter),
    /// [`LeasedLimiter`](crate::LeasedLimiter)) connect to a `rediss://` URL: the
    /// certificates they trust and, for mutual TLS, the certificate they show. Set with
    /// [`Options::tls`](crate::Options::tls); a `rediss://` URL without it trusts the
    /// system's roots. The server's name is the URL's host (a DNS name or an IP address),
    /// checked against its certificate.
    ///
    /// ```
    /// use slidelimit_redis::{Error, Tls};
    ///
    /// // Not PEM at all: a typed error, not a panic.
    /// let err = Tls::ca_pem(b"not a certificate").unwrap_err();
    /// assert!(matches!(err, Error::Config(_)));
    /// ```
    ///
    /// `AsyncRedisLimiter` (feature `tokio`) reads it too, through the `redis` crate's own
    /// rustls client: the same CA and client certificate, handed over as the PEM given
    /// here (`Settings::async_client`).
    #[derive(Clone)]
    pub struct Tls {
        roots: Arc<RootCertStore>,
        config: Arc<ClientConfig>,
        client_identity: bool,
        /// The PEM given, for the async limiter: `redis` builds its own rustls
        /// configuration and takes certificates only as PEM. `None` for
        /// [`Tls::system_roots`] (`redis` then loads the same system roots itself).
        pem: Arc<Pem>,
    }

    /// The PEM a [`Tls`] was made from: the CA (none for the system's roots) and the client
    /// certificate chain and key.
    // Read only by the async limiter's client (feature `tokio`).
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    struct Pem {
        ca: Option<Vec<u8>>,
        identity: Option<(Vec<u8>, Vec<u8>)>,
    }

    impl fmt::Debug for Tls {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            // Never the key; the roots only by count.
            f.debug_struct("Tls")
                .field("roots", &self.roots.len())
                .field("client_identity", &self.client_identity)
                .finish()
        }
    }

    fn config_error(what: &str, err: impl fmt::Display) -> Error {
        Error::Config(format!("TLS: {what}: {err}"))
    }

    /// Every certificate in `pem` (at least one).
    fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| config_error(what, err))?;
        if certs.is_empty() {
            return Err(config_error(what, "no CERTIFICATE section in the PEM"));
        }
        Ok(certs)
    }

    /// A client configuration over `roots`, with the `ring` provider named here rather
    /// than a process-wide default (which rustls would have to guess, or panic over, when
    /// another crate of the build turned on a second provider).
    fn client_config(
        roots: Arc<RootCertStore>,
        identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    ) -> Result<Arc<ClientConfig>, Error> {
        let builder =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|err| config_error("protocol versions", err))?
                .with_root_certificates(roots);
        let config = match identity {
            None => builder.with_no_client_auth(),
            Some((certs, key)) => builder
                .with_client_auth_cert(certs, key)
                .map_err(|err| config_error("client certificate and key", err))?,
        };
        Ok(Arc::new(config))
    }

    impl Tls {
        fn with_roots(roots: RootCertStore, ca: Option<Vec<u8>>) -> Result<Self, Error> {
            let roots = Arc::new(roots);
            Ok(Self {
                config: client_config(Arc::clone(&roots), None)?,
                roots,
                client_identity: false,
                pem: Arc::new(Pem { ca, identity: None }),
            })
        }

        /// Trusts the system's certificate roots (what `rediss://` uses when no [`Tls`] is
        /// given): on Linux the distribution's bundle (`/etc/ssl/certs`, or where
        /// `SSL_CERT_FILE` / `SSL_CERT_DIR` point), the platform's store elsewhere. For the
        /// managed services whose certificates a public CA signs.
        ///
        /// # Errors
        /// [`Error::Config`] when the system has no usable root (no CA bundle installed:
        /// `ca-certificates` on Debian).
        pub fn system_roots() -> Result<Self, Error> {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            let (added, _unparsable) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found
                    .errors
                    .first()
                    .map_or_else(|| "none found".to_owned(), ToString::to_string);
                return Err(config_error("no usable system certificate roots", why));
            }
            Self::with_roots(roots, None)
        }

        /// Trusts the CA certificates in `pem` (one or more `CERTIFICATE` sections) and no
        /// others: a server whose certificate a private CA signs (a self-hosted Redis, a
        /// managed service's own CA).
        ///
        /// # Errors
        /// [`Error::Config`] when `pem` holds no certificate, a malformed one, or one that
        /// cannot be a trust anchor.
        pub fn ca_pem(pem: impl AsRef<[u8]>) -> Result<Self, Error> {
            let mut roots = RootCertStore::empty();
            for cert in certificates(pem.as_ref(), "CA certificate")? {
                roots
                    .add(cert)
                    .map_err(|err| config_error("CA certificate", err))?;
            }
            Self::with_roots(roots, Some(pem.as_ref().to_vec()))
        }

        /// Shows the certificate chain in `cert_pem` (the client's certificate first) and
        /// proves it with the private key in `key_pem` (PKCS#8, PKCS#1 or SEC1), for a
        /// server that asks for client certificates (Redis's `tls-auth-clients yes`).
        ///
        /// # Errors
        /// [`Error::Config`] when either PEM holds no certificate or no key, or the key is
        /// of a kind rustls cannot sign with, or does not match the certificate.
        pub fn client_identity(
            self,
            cert_pem: impl AsRef<[u8]>,
            key_pem: impl AsRef<[u8]>,
        ) -> Result<Self, Error> {
            let (cert_pem, key_pem) = (cert_pem.as_ref(), key_pem.as_ref());
            let certs = certificates(cert_pem, "client certificate")?;
            let key = PrivateKeyDer::from_pem_slice(key_pem)
                .map_err(|err| config_error("client key", err))?;
            Ok(Self {
                config: client_config(Arc::clone(&self.roots), Some((certs, key)))?,
                roots: self.roots,
                client_identity: true,
                pem: Arc::new(Pem {
                    ca: self.pem.ca.clone(),
                    identity: Some((cert_pem.to_vec(), key_pem.to_vec())),
                }),
            })
        }

        pub(crate) fn settings(&self) -> Settings {
            Settings(Arc::clone(&self.config), Arc::clone(&self.pem))
        }
    }

    /// A pool's TLS configuration, before the host is known (and, for the async limiter,
    /// the PEM it was made from).
    pub(crate) struct Settings(
        Arc<ClientConfig>,
        // Read only by the async limiter's client (feature `tokio`).
        #[cfg_attr(not(feature = "tokio"), allow(dead_code))] Arc<Pem>,
    );

    impl fmt::Debug for Settings {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            // Never the key.
            f.debug_tuple("Settings").finish_non_exhaustive()
        }
    }

    impl Settings {
        /// A `redis` client for the async limiter that connects to `info`'s host and port
        /// over TLS (`rediss://`), trusting this CA (or the system's roots) and showing
        /// this client certificate, if any. `redis` checks the server's name against the
        /// host, as the blocking limiters do; its handshake runs inside the task that makes
        /// the connection, under the call's timeout (`asynchronous/connection.rs`).
        ///
        /// `redis` builds its rustls configuration with `ClientConfig::builder()`, which
        /// takes the process's default crypto provider: `ring`'s is installed here unless
        /// the process already chose one, so that it never has to guess (rustls panics when
        /// the build holds two providers and none was installed). The `Tls` was checked by
        /// our own rustls configuration when it was made, so `redis` parses PEM known to be
        /// good.
        ///
        /// # Errors
        /// [`Error::Config`] for a URL that is not TCP (a Unix socket cannot be
        /// `rediss://`; [`super::scheme`] already turned the scheme into `redis://`) or PEM
        /// that `redis` refuses.
        #[cfg(feature = "tokio")]
        pub(crate) fn async_client(
            &self,
            info: redis::ConnectionInfo,
        ) -> Result<redis::Client, Error> {
            // Err only when a provider is installed already: that one stays.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let redis::ConnectionAddr::Tcp(host, port) = info.addr().clone() else {
                return Err(Error::Config(
                    "a `rediss://` URL must name a host and port".to_owned(),
                ));
            };
            let info = info.set_addr(redis::ConnectionAddr::TcpTls {
                host,
                port,
                insecure: false,
                tls_params: None,
            });
            let pem = &self.1;
            let certificates = redis::TlsCertificates {
                client_tls: pem
                    .identity
                    .as_ref()
                    .map(|(cert, key)| redis::ClientTlsConfig {
                        client_cert: cert.clone(),
                        client_key: key.clone(),
                    }),
                root_cert: pem.ca.clone(),
            };
            redis::Client::build_with_tls(info, certificates)
                .map_err(|err| config_error("the async client", err))
        }

        /// The connector for `host`, the URL's host: the name the server's certificate
        /// must carry.
        pub(crate) fn connector(&self, host: &str) -> Result<Connector, Error> {
            let name = ServerName::try_from(host.to_owned())
                .map_err(|err| config_error(&format!("server name `{host}`"), err))?;
            Ok(Connector {
                config: Arc::clone(&self.0),
                name,
            })
        }
    }

    /// Starts TLS sessions to one server.
    pub(crate) struct Connector {
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    }

    impl fmt::Debug for Connector {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Connector")
                .field("name", &self.name)
                .finish_non_exhaustive()
        }
    }

    impl Connector {
        /// A TLS session over `tcp`, its handshake not yet begun (see
        /// [`TlsStream::handshake_step`]).
        pub(crate) fn start(&self, tcp: TcpStream) -> Result<TlsStream, Error> {
            let conn = ClientConnection::new(Arc::clone(&self.config), self.name.clone())
                .map_err(|err| config_error("starting a session", err))?;
            Ok(TlsStream { conn, sock: tcp })
        }
    }

    /// The error a step answers when it did some I/O but has nothing for its caller yet:
    /// the pool's wait loop checks the deadline and steps again.
    fn step_again() -> io::Error {
        io::ErrorKind::Interrupted.into()
    }

    /// A TLS session and its socket, driven one socket wait at a time (see the module
    /// docs). The socket's timeouts are the caller's: each step waits at most one of them.
    pub(crate) struct TlsStream {
        conn: ClientConnection,
        sock: TcpStream,
    }

    impl TlsStream {
        pub(crate) fn socket(&self) -> &TcpStream {
            &self.sock
        }

        /// Reads one batch of records from the socket and processes them. A TLS error
        /// (a bad certificate, an alert from the server) is an [`io::ErrorKind::InvalidData`]
        /// error carrying the [`rustls::Error`], after a last try at sending the alert that
        /// tells the server why.
        fn read_records(&mut self) -> io::Result<usize> {
            let read = self.conn.read_tls(&mut self.sock)?;
            if let Err(err) = self.conn.process_new_packets() {
                // One write, bounded by the socket's (short) write timeout.
                let _ = self.conn.write_tls(&mut self.sock);
                return Err(io::Error::new(io::ErrorKind::InvalidData, err));
            }
            Ok(read)
        }

        /// One step of the handshake: `Ok` once it is done, [`step_again`] after a socket
        /// read or write that did not finish it.
        pub(crate) fn handshake_step(&mut self) -> io::Result<usize> {
            if self.conn.wants_write() {
                self.conn.write_tls(&mut self.sock)?;
                return Err(step_again());
            }
            if !self.conn.is_handshaking() {
                return Ok(1);
            }
            if self.read_records()? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection during the TLS handshake",
                ));
            }
            Err(step_again())
        }

        /// One step of a read: plaintext already decrypted, or else one socket write of
        /// what is queued (an alert, the end of a request) or one socket read.
        pub(crate) fn read_step(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.conn.reader().read(buf) {
                // Plaintext, or 0 after the server's close_notify.
                Ok(read) => return Ok(read),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                // The socket closed without close_notify.
                Err(err) => return Err(err),
            }
            if self.conn.wants_write() {
                self.conn.write_tls(&mut self.sock)?;
                return Err(step_again());
            }
            // End of file: the reader answers it on the next step.
            self.read_records()?;
            Err(step_again())
        }

        /// One step of a write: the queue is sent first (one socket write), so that it
        /// never grows past one request; then `buf` is encrypted into it.
        pub(crate) fn write_step(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.conn.wants_write() {
                self.conn.write_tls(&mut self.sock)?;
                return Err(step_again());
            }
            self.conn.writer().write(buf)
        }

        /// One step of a flush: `Ok` once nothing is queued, else one socket write.
        pub(crate) fn flush_step(&mut self) -> io::Result<usize> {
            if !self.conn.wants_write() {
                return Ok(0);
            }
            self.conn.write_tls(&mut self.sock)?;
            if self.conn.wants_write() {
                Err(step_again())
            } else {
                Ok(0)
            }
        }

        /// Whether the server has neither closed the session nor sent data unasked (the
        /// pool's check before reuse), without waiting: what is waiting on the socket goes
        /// through rustls, which takes the records that carry no data (TLS 1.3's session
        /// tickets, a key update) in its stride; plaintext, a close or an error make the
        /// connection unfit.
        pub(crate) fn is_open(&mut self) -> bool {
            if self.sock.set_nonblocking(true).is_err() {
                return false;
            }
            // A few batches at most: a peer that keeps sending is not idle.
            let mut open = false;
            for _ in 0..4 {
                match self.read_records() {
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                        open = true;
                        break;
                    }
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let Ok(state) = self.conn.process_new_packets() else {
                            break;
                        };
                        if state.plaintext_bytes_to_read() > 0 || state.peer_has_closed() {
                            break;
                        }
                    }
                }
            }
            // A socket left nonblocking would make the next read fail at once: dropped.
            self.sock.set_nonblocking(false).is_ok() && open
        }
    }
}

#[cfg(test)]
mod tests {
    //! The scheme, read before any connection (the handshake and the certificate checks are
    //! tested against a real TLS server: `tests/it/production_tls.rs`).

    use super::scheme;
    use crate::Options;

    /// Without the feature, `rediss://` is refused when the limiter is built, with an error
    /// that says which feature to turn on (it used to be refused as an unknown address).
    #[cfg(not(feature = "tls"))]
    #[test]
    fn rediss_without_the_feature_says_to_enable_it() {
        use crate::{Error, RedisLimiter};
        use slidelimit::Limit;

        let limit = Limit::new(1, 1_000_000).expect("limit");
        for url in [
            "rediss://127.0.0.1:6380/",
            "REDISS://:secret@cache.example:6380/1",
        ] {
            let err = RedisLimiter::new(url, limit, Options::new()).unwrap_err();
            assert!(
                matches!(&err, Error::Config(detail) if detail.contains("feature `tls`")),
                "{err:?}"
            );
        }
    }

    /// Plain URLs reach `redis`'s parser as they were.
    #[test]
    fn plain_urls_pass_through() {
        for url in ["redis://127.0.0.1:6379/2", "unix:///tmp/redis.sock"] {
            let (parsed, tls) = scheme(url, Options::new().tls_value()).expect("a plain URL");
            assert_eq!(parsed, url);
            assert!(tls.is_none());
        }
    }
}
