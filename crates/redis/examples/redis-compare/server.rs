//! The benchmark's own `redis-server`, on a free loopback port in a temporary directory.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    dir: std::path::PathBuf,
    pub url: String,
}

impl Server {
    pub fn start() -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|err| format!("no free port: {err}"))?
            .port();
        let dir = std::env::temp_dir().join(format!("slidelimit-redis-compare-{port}"));
        std::fs::create_dir_all(&dir).map_err(|err| err.to_string())?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--dir", &dir.to_string_lossy()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| {
                format!("cannot start redis-server ({err}); bash ci/redis.sh installs it")
            })?;
        let server = Self {
            child,
            dir,
            url: format!("redis://127.0.0.1:{port}/"),
        };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(mut con) = server.connection() {
                if redis::cmd("PING").query::<String>(&mut con).is_ok() {
                    return Ok(server);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("redis-server did not answer PING within 10 s".to_owned())
    }

    pub fn connection(&self) -> redis::RedisResult<redis::Connection> {
        let con = redis::Client::open(self.url.as_str())?
            .get_connection_with_timeout(Duration::from_secs(5))?;
        con.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(con)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
