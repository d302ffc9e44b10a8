//! The syslog sink: each audit line as one RFC 5424 message, over UDP (RFC 5426) or TCP with
//! octet-counting framing (RFC 6587 §3.4.1).
//!
//! Owns the message format (`<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID - MSG`: severity
//! `notice` for blocked or refused events and `info` otherwise, MSGID the event name, no
//! structured data, MSG the audit JSON line unchanged and without a BOM), the framing, and
//! the connection policy: TCP connects lazily with a timeout, writes each burst within a total
//! timeout (a collector reading a trickle holds the writer no longer than a stuck one), and after
//! a failure waits with exponential backoff (up to [`MAX_BACKOFF`]) before it tries again;
//! meanwhile events are dropped and counted (`disconnected`), never queued without bound and
//! never waited for. A message longer than `max_message` is dropped and counted (`too_large`)
//! rather than truncated or split: a cut JSON line is not parseable, and the file sink (if
//! configured) still has it.
//!
//! Hand-written rather than the `syslog` crate: that crate writes TCP messages back to back
//! with no framing (a collector cannot tell where one ends), takes the RFC 5424 MSGID as an
//! integer (ours is the event name), connects without a timeout and never reconnects; the
//! format itself is one `format!`. Everything here runs on the sink's own writer thread.

use super::{reason, Failure, Output};
use serde::Deserialize;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant, SystemTime};

/// Longest wait between two connection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// Bound on connecting and on each write; the writer thread never hangs on a collector.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// Bytes buffered in a TCP burst before they are written.
const BURST_BYTES: usize = 256 * 1024;

/// The facilities of RFC 5424 §6.2.1, by name.
pub const FACILITIES: &[(&str, u8)] = &[
    ("kern", 0),
    ("user", 1),
    ("mail", 2),
    ("daemon", 3),
    ("auth", 4),
    ("syslog", 5),
    ("lpr", 6),
    ("news", 7),
    ("uucp", 8),
    ("cron", 9),
    ("authpriv", 10),
    ("ftp", 11),
    ("ntp", 12),
    ("audit", 13),
    ("alert", 14),
    ("clock", 15),
    ("local0", 16),
    ("local1", 17),
    ("local2", 18),
    ("local3", 19),
    ("local4", 20),
    ("local5", 21),
    ("local6", 22),
    ("local7", 23),
];

/// The numeric code of a facility name.
pub fn facility_code(name: &str) -> Option<u8> {
    FACILITIES.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
}

const NOTICE: u8 = 5;
const INFO: u8 = 6;

/// How messages travel.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    #[default]
    Udp,
    Tcp,
}

/// A checked syslog destination.
#[derive(Debug, Clone)]
pub struct SyslogConfig {
    pub address: SocketAddr,
    pub transport: Transport,
    pub facility: u8,
    pub app_name: String,
    pub hostname: String,
    /// Longest message (header and MSG, without the TCP frame's length prefix).
    pub max_message: usize,
}

/// The host's name, for the HOSTNAME field when none is configured (`-` when unknown).
pub fn system_hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| header_field(&h, 255))
        .unwrap_or_else(|| "-".into())
}

/// Severity of an audit event: `notice` when something was blocked or refused.
pub fn severity(event: Option<&str>) -> u8 {
    match event {
        Some(
            "elicitation.blocked" | "answer.rejected" | "message.refused" | "completion.dropped",
        ) => NOTICE,
        _ => INFO,
    }
}

/// The `event` field of an audit line (without parsing the rest into values).
fn event_name(line: &str) -> Option<&str> {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        event: Option<&'a str>,
    }
    serde_json::from_str::<Head<'_>>(line).ok()?.event
}

/// A header field as RFC 5424 allows it: printable US-ASCII without spaces, at most `max`
/// characters, `-` (the nil value) when empty.
pub fn header_field(value: &str, max: usize) -> String {
    let field: String = value
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .take(max)
        .collect();
    if field.is_empty() {
        "-".into()
    } else {
        field
    }
}

/// One audit line as an RFC 5424 message.
pub fn format(config: &SyslogConfig, now: SystemTime, pid: u32, line: &str) -> String {
    let event = event_name(line);
    let pri = u16::from(config.facility) * 8 + u16::from(severity(event));
    format!(
        "<{pri}>1 {ts} {host} {app} {pid} {msgid} - {line}",
        ts = humantime::format_rfc3339_millis(now),
        host = config.hostname,
        app = config.app_name,
        msgid = header_field(event.unwrap_or(""), 32),
    )
}

/// RFC 6587 octet-counting: `MSG-LEN SP SYSLOG-MSG`.
pub fn frame(message: &str, out: &mut Vec<u8>) {
    let _ = write!(out, "{} ", message.len());
    out.extend_from_slice(message.as_bytes());
}

/// Logs a connection's state changes once each, not once per event.
#[derive(Default)]
struct Health {
    down: bool,
}

impl Health {
    fn failed(&mut self, address: SocketAddr, error: &io::Error) {
        if !self.down {
            self.down = true;
            tracing::warn!(%address, error = %error, "Syslog audit sink unreachable; events are dropped and counted until it is back.");
        }
    }

    fn ok(&mut self, address: SocketAddr) {
        if self.down {
            self.down = false;
            tracing::info!(%address, "Syslog audit sink delivering again.");
        }
    }
}

enum Conn {
    Udp(Option<UdpSocket>),
    Tcp {
        stream: Option<TcpStream>,
        retry_at: Option<Instant>,
        backoff: Duration,
    },
}

/// The syslog writer.
pub struct SyslogOutput {
    config: SyslogConfig,
    pid: u32,
    conn: Conn,
    health: Health,
    /// Framed TCP messages of the current burst, and how many.
    burst: Vec<u8>,
    pending: u64,
}

impl SyslogOutput {
    /// Nothing is opened until the first event.
    pub fn new(config: SyslogConfig) -> Self {
        let conn = match config.transport {
            Transport::Udp => Conn::Udp(None),
            Transport::Tcp => Conn::Tcp {
                stream: None,
                retry_at: None,
                backoff: FIRST_BACKOFF,
            },
        };
        Self {
            config,
            pid: std::process::id(),
            conn,
            health: Health::default(),
            burst: Vec::new(),
            pending: 0,
        }
    }

    fn send_udp(&mut self, message: &str) -> Result<(), Failure> {
        let Conn::Udp(socket) = &mut self.conn else {
            return Ok(());
        };
        let address = self.config.address;
        let sent = match socket {
            Some(s) => s.send(message.as_bytes()),
            None => udp_socket(address).and_then(|s| {
                let sent = s.send(message.as_bytes());
                *socket = Some(s);
                sent
            }),
        };
        match sent {
            Ok(_) => {
                self.health.ok(address);
                Ok(())
            }
            Err(e) => {
                // A refusal reported by ICMP surfaces here; the socket stays usable.
                self.health.failed(address, &e);
                Err(Failure::quiet(reason::WRITE_ERROR, 1))
            }
        }
    }

    /// A connected stream, connecting when the backoff allows; `None` while disconnected.
    fn tcp_stream(&mut self) -> Option<&mut TcpStream> {
        let Conn::Tcp {
            stream,
            retry_at,
            backoff,
        } = &mut self.conn
        else {
            return None;
        };
        if stream.as_ref().is_some_and(peer_closed) {
            // The collector closed (restart): reconnect now rather than lose a burst.
            *stream = None;
        }
        if stream.is_none() {
            if retry_at.is_some_and(|at| Instant::now() < at) {
                return None;
            }
            match tcp_connect(self.config.address) {
                Ok(s) => {
                    *stream = Some(s);
                    *retry_at = None;
                    *backoff = FIRST_BACKOFF;
                }
                Err(e) => {
                    self.health.failed(self.config.address, &e);
                    *retry_at = Some(Instant::now() + *backoff);
                    *backoff = (*backoff * 2).min(MAX_BACKOFF);
                    return None;
                }
            }
        }
        stream.as_mut()
    }

    fn flush_tcp(&mut self) -> Result<(), Failure> {
        if self.burst.is_empty() {
            return Ok(());
        }
        let events = std::mem::take(&mut self.pending);
        let burst = std::mem::take(&mut self.burst);
        let address = self.config.address;
        let Some(stream) = self.tcp_stream() else {
            return Err(Failure::quiet(reason::DISCONNECTED, events));
        };
        match write_within(stream, &burst, IO_TIMEOUT) {
            Ok(()) => {
                self.health.ok(address);
                self.burst = burst;
                self.burst.clear();
                Ok(())
            }
            Err(e) => {
                self.health.failed(address, &e);
                if let Conn::Tcp {
                    stream, retry_at, ..
                } = &mut self.conn
                {
                    *stream = None;
                    *retry_at = Some(Instant::now() + FIRST_BACKOFF);
                }
                Err(Failure::quiet(reason::WRITE_ERROR, events))
            }
        }
    }
}

impl Output for SyslogOutput {
    fn write_line(&mut self, line: &str) -> Result<(), Failure> {
        let message = format(&self.config, SystemTime::now(), self.pid, line);
        if message.len() > self.config.max_message {
            return Err(Failure::quiet(reason::TOO_LARGE, 1));
        }
        match self.config.transport {
            Transport::Udp => self.send_udp(&message),
            Transport::Tcp => {
                if self.burst.is_empty() && self.tcp_stream().is_none() {
                    return Err(Failure::quiet(reason::DISCONNECTED, 1));
                }
                frame(&message, &mut self.burst);
                self.pending += 1;
                if self.burst.len() >= BURST_BYTES {
                    return self.flush_tcp();
                }
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> Result<(), Failure> {
        self.flush_tcp()
    }

    fn reopen(&mut self) -> io::Result<()> {
        // Reconnect (or rebind) on the next event, without waiting out a backoff.
        self.conn = Self::new(self.config.clone()).conn;
        Ok(())
    }
}

/// Writes all of `bytes` within `limit` in all: a collector that reads a trickle cannot hold
/// the writer longer than one that reads nothing (the socket's own timeout bounds each call,
/// not the sum of many small ones).
fn write_within(stream: &mut TcpStream, mut bytes: &[u8], limit: Duration) -> io::Result<()> {
    let deadline = Instant::now() + limit;
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        stream.set_write_timeout(Some(left))?;
        match stream.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn udp_socket(address: SocketAddr) -> io::Result<UdpSocket> {
    let local: SocketAddr = if address.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local)?;
    socket.connect(address)?;
    socket.set_write_timeout(Some(IO_TIMEOUT))?;
    Ok(socket)
}

fn tcp_connect(address: SocketAddr) -> io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&address, IO_TIMEOUT)?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// True when the collector has closed its end (a read would see end of file), checked
/// without blocking. Collectors never send on a syslog connection.
fn peer_closed(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let mut byte = [0u8; 1];
    let closed = match stream.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    };
    closed || stream.set_nonblocking(false).is_err()
}

#[cfg(test)]
mod tests;
