//! A real proxy in front: Debian's nginx (`bash ci/nginx.sh`), started on a loopback port
//! with a config this test writes, proxying to an axum server whose layer keys by
//! `PeerIp::x_forwarded_for_from` with nginx's address as the one trusted proxy. Clients
//! connect from different loopback addresses (127.0.0.2, .3, ...), through nginx or around
//! it, with and without forged `X-Forwarded-For` headers (addresses, and quotes that must not
//! hide nginx's entry); a limit of one request per key shows which key each request got.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use slidelimit::LockFreeLimiter;
use slidelimit_tower::{PeerIp, RateLimitLayer, TrustedProxies};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use crate::support::{counted_router, limit, serve_axum};

/// An nginx process started by the test, stopped when dropped.
struct Nginx {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The nginx binary: on PATH, or where Debian puts it (root's PATH may lack /usr/sbin).
fn nginx_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("nginx"))
        .find(|candidate| candidate.is_file());
    on_path
        .or_else(|| Some(PathBuf::from("/usr/sbin/nginx")).filter(|path| path.is_file()))
        .expect("nginx is not installed: run `bash ci/nginx.sh` (Debian's nginx package)")
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Starts nginx on a free loopback port, proxying everything to `upstream` and appending the
/// client's address to `X-Forwarded-For` (`$proxy_add_x_forwarded_for`), as the usual
/// reverse-proxy configuration does.
async fn start_nginx(upstream: SocketAddr) -> Nginx {
    let dir = std::env::temp_dir().join(format!("slidelimit-nginx-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory for nginx");
    let port = free_port();
    let temp = |name: &str| dir.join(name).display().to_string();
    let config = format!(
        "daemon off;\n\
         master_process off;\n\
         worker_processes 1;\n\
         pid {pid};\n\
         error_log {error_log} warn;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n\
           access_log off;\n\
           client_body_temp_path {body};\n\
           proxy_temp_path {proxy};\n\
           fastcgi_temp_path {fastcgi};\n\
           uwsgi_temp_path {uwsgi};\n\
           scgi_temp_path {scgi};\n\
           server {{\n\
             listen 127.0.0.1:{port};\n\
             location / {{\n\
               proxy_pass http://{upstream};\n\
               proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
             }}\n\
           }}\n\
         }}\n",
        pid = temp("nginx.pid"),
        error_log = temp("error.log"),
        body = temp("body"),
        proxy = temp("proxy"),
        fastcgi = temp("fastcgi"),
        uwsgi = temp("uwsgi"),
        scgi = temp("scgi"),
    );
    let config_path = dir.join("nginx.conf");
    std::fs::write(&config_path, config).expect("the nginx config");
    let child = Command::new(nginx_binary())
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(&config_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let nginx = Nginx { child, addr, dir };
    wait_until_listening(addr, &nginx.dir).await;
    nginx
}

/// Waits (up to 10 s) until `addr` accepts connections.
async fn wait_until_listening(addr: SocketAddr, dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "nginx did not listen on {addr}: {}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sends `GET /` to `to` from the loopback address `from`, with an `X-Forwarded-For` header
/// if `forged` is given, and returns the response's status code.
async fn status_from(from: &str, to: SocketAddr, forged: Option<&str>) -> u16 {
    let socket = TcpSocket::new_v4().expect("a socket");
    let source: IpAddr = from.parse().expect("a loopback address");
    socket
        .bind(SocketAddr::new(source, 0))
        .expect("any 127.0.0.0/8 address binds on loopback");
    let mut stream = socket.connect(to).await.expect("connects");
    let header = forged.map_or(String::new(), |value| {
        format!("X-Forwarded-For: {value}\r\n")
    });
    let request = format!("GET / HTTP/1.1\r\nHost: test\r\n{header}Connection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("sends the request");
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .expect("reads the response");
    let text = String::from_utf8_lossy(&response);
    text.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_trusted_proxy_names_the_client() {
    // One request per key: a second request on a key is refused with 429.
    let limiter = Arc::new(LockFreeLimiter::<IpAddr>::new(limit(1)));
    let proxies = TrustedProxies::new(["127.0.0.1"]).expect("a valid proxy list");
    let calls = Arc::new(AtomicUsize::new(0));
    let app = counted_router(&calls).layer(RateLimitLayer::new(
        limiter,
        PeerIp::x_forwarded_for_from(proxies),
    ));
    let app_server = serve_axum(app, calls).await;
    let nginx = start_nginx(app_server.addr).await;
    let (proxy, direct) = (nginx.addr, app_server.addr);

    // Through the proxy, two clients are keyed apart: each gets its one request.
    assert_eq!(status_from("127.0.0.2", proxy, None).await, 200);
    assert_eq!(status_from("127.0.0.3", proxy, None).await, 200);
    assert_eq!(status_from("127.0.0.2", proxy, None).await, 429, "same key");

    // A forged header sent through the proxy cannot choose the key: nginx appends the real
    // address, and the walk stops there. Client .2 forging a fresh address is still .2 ...
    assert_eq!(
        status_from("127.0.0.2", proxy, Some("203.0.113.77")).await,
        429
    );
    // ... and client .4 forging .3's (spent) address is keyed as .4.
    assert_eq!(
        status_from("127.0.0.4", proxy, Some("127.0.0.3")).await,
        200
    );

    // Around the proxy, a client that forges the header is keyed by its own address: .5
    // claiming to be .2 (spent) gets its own quota, then is refused whatever it claims.
    assert_eq!(
        status_from("127.0.0.5", direct, Some("127.0.0.2")).await,
        200
    );
    assert_eq!(
        status_from("127.0.0.5", direct, Some("198.51.100.1")).await,
        429
    );

    // X-Forwarded-For has no quoted form: a quote a client sends through the proxy cannot
    // join its own entry with the one nginx appends after it, which would leave the walk no
    // address past the proxy and key the request by the proxy's address, a fresh quota
    // shared by every client behind it. Client .2, whose key is spent, gets nothing more ...
    const QUOTES: [&str; 3] = ["\"", "\"9.9.9.9", "9.9.9.9\""];
    for forged in QUOTES {
        assert_eq!(
            status_from("127.0.0.2", proxy, Some(forged)).await,
            429,
            "{forged}"
        );
    }
    // ... and a fresh client sending one of them spends its own key, not the proxy's.
    for (client, forged) in ["127.0.0.6", "127.0.0.7", "127.0.0.8"]
        .into_iter()
        .zip(QUOTES)
    {
        assert_eq!(
            status_from(client, proxy, Some(forged)).await,
            200,
            "{forged}"
        );
        assert_eq!(status_from(client, proxy, None).await, 429, "{forged}");
    }
    // The proxy's own key (a request from its address around it) was never spent.
    assert_eq!(status_from("127.0.0.1", direct, None).await, 200);
    assert_eq!(app_server.calls(), 8);
}
