//! Real `redis-server` processes (Debian's `redis-server`, installed by `.ci/run`) on loopback
//! ports picked free, in a temporary directory, stopped with the test (by PID: the child
//! handle). A standalone server can be stopped and restarted on the same port; a three-master
//! Redis Cluster is formed with `redis-cli --cluster create`.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn redis_server() -> &'static str {
    let found = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "redis-server not installed: run .ci/run (it installs Debian's redis-server and redis-tools)"
    );
    "redis-server"
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `redis-server`.
pub struct RedisServer {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    cluster: bool,
}

impl RedisServer {
    /// A standalone server, no persistence.
    pub fn start() -> Self {
        Self::start_on(free_port(), false)
    }

    fn start_on(port: u16, cluster: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut server = Self {
            port,
            dir,
            child: None,
            cluster,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new(redis_server());
        cmd.args([
            "--port",
            &self.port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
        ])
        .arg("--dir")
        .arg(self.dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if self.cluster {
            cmd.args(["--cluster-enabled", "yes", "--cluster-config-file"])
                .arg(self.dir.path().join("nodes.conf"))
                .args(["--cluster-node-timeout", "2000"]);
        }
        self.child = Some(cmd.spawn().expect("starting redis-server"));
        self.wait_ready();
    }

    fn wait_ready(&self) {
        for _ in 0..200 {
            if cli(self.port, &["PING"]).is_some_and(|o| o.trim() == "PONG") {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server on port {} did not come up", self.port);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server (SIGKILL to our own child: a crash, not a shutdown).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Keys the server holds (for "nothing stored holds a raw value" checks).
    pub fn dump(&self) -> String {
        let keys = cli(self.port, &["--scan"]).unwrap_or_default();
        let mut out = String::new();
        for key in keys.lines().filter(|k| !k.is_empty()) {
            out.push_str(key);
            out.push('\n');
            let kind = cli(self.port, &["TYPE", key]).unwrap_or_default();
            let value = match kind.trim() {
                "string" => cli(self.port, &["GET", key]),
                "hash" => cli(self.port, &["HGETALL", key]),
                _ => None,
            };
            out.push_str(&value.unwrap_or_default());
        }
        out
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `redis-cli -p port args…`; its stdout, or `None` if it failed.
pub fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Three masters, no replicas, formed into one Redis Cluster.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> Self {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| RedisServer::start_on(free_port(), true))
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let mut args = vec!["--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"]);
        let status = Command::new("redis-cli")
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli --cluster create");
        assert!(status.success(), "forming the Redis Cluster failed");
        for _ in 0..200 {
            let ok = nodes.iter().all(|n| {
                cli(n.port, &["CLUSTER", "INFO"]).is_some_and(|i| i.contains("cluster_state:ok"))
            });
            if ok {
                return Self { nodes };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the Redis Cluster did not reach cluster_state:ok");
    }

    /// The YAML list of seed node URLs.
    pub fn seeds_yaml(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("\"{}\"", n.url()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `PathBuf` of the built binary (for tests that run real `elicitgate serve` processes).
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_elicitgate"))
}
