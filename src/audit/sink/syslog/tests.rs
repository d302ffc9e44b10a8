//! Unit tests of the syslog sink.

use super::*;
use std::io::Read;
use std::time::UNIX_EPOCH;

fn config(address: SocketAddr, transport: Transport) -> SyslogConfig {
    SyslogConfig {
        address,
        transport,
        facility: facility_code("local0").unwrap(),
        app_name: "elicitgate".into(),
        hostname: "gw-1".into(),
        max_message: 8192,
    }
}

const BLOCKED: &str = r#"{"v":1,"ts":"2025-01-01T00:00:00.000Z","event_id":"e1","event":"elicitation.blocked","route":"demo"}"#;

#[test]
fn messages_follow_rfc_5424_with_the_event_as_msgid() {
    let c = config("127.0.0.1:514".parse().unwrap(), Transport::Udp);
    let at = UNIX_EPOCH + Duration::from_millis(1_735_689_600_123);
    assert_eq!(
        format(&c, at, 42, BLOCKED),
        format!(
            "<133>1 2025-01-01T00:00:00.123Z gw-1 elicitgate 42 elicitation.blocked - {BLOCKED}"
        )
    );
    let allowed = r#"{"v":1,"event":"elicitation.allowed"}"#;
    assert!(format(&c, at, 42, allowed).starts_with("<134>1 "));
    // No event field: nil MSGID, info.
    let odd = r#"{"v":1}"#;
    assert!(format(&c, at, 1, odd)
        .starts_with("<134>1 2025-01-01T00:00:00.123Z gw-1 elicitgate 1 - - {"));
    assert_eq!(severity(Some("message.refused")), NOTICE);
    assert_eq!(severity(Some("policy.loaded")), INFO);
}

#[test]
fn header_fields_are_printable_ascii_bounded_and_never_empty() {
    assert_eq!(header_field("my host", 255), "my_host");
    assert_eq!(header_field("", 48), "-");
    assert_eq!(header_field("héllo", 48), "h_llo");
    assert_eq!(header_field(&"a".repeat(100), 48).len(), 48);
    assert_eq!(facility_code("local7"), Some(23));
    assert_eq!(facility_code("nope"), None);
}

#[test]
fn tcp_frames_are_octet_counted() {
    let mut out = Vec::new();
    frame("<134>1 - - - - - - é", &mut out);
    frame("x", &mut out);
    assert_eq!(out, "21 <134>1 - - - - - - é1 x".as_bytes());
}

#[test]
fn udp_sends_one_datagram_per_event_and_drops_oversized_ones() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut c = config(server.local_addr().unwrap(), Transport::Udp);
    c.max_message = 600;
    let mut out = SyslogOutput::new(c);
    out.write_line(BLOCKED).unwrap();
    out.flush().unwrap();
    let mut buf = [0u8; 2048];
    let n = server.recv(&mut buf).unwrap();
    let got = std::str::from_utf8(&buf[..n]).unwrap();
    assert!(got.starts_with("<133>1 "), "{got}");
    assert!(got.ends_with(BLOCKED));
    let big = format!(
        r#"{{"event":"elicitation.allowed","pad":"{}"}}"#,
        "x".repeat(700)
    );
    let failure = out.write_line(&big).unwrap_err();
    assert_eq!(failure.reason, reason::TOO_LARGE);
}

#[test]
fn tcp_is_lazy_counts_while_down_and_reconnects_after_backoff() {
    // A port with nothing listening: dropped and counted as disconnected, quickly.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let mut out = SyslogOutput::new(config(address, Transport::Tcp));
    let started = Instant::now();
    for _ in 0..100 {
        let f = out.write_line(BLOCKED).unwrap_err();
        assert_eq!(f.reason, reason::DISCONNECTED);
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "backoff, not a connect per event"
    );
    // The collector comes up on that port: after the backoff, delivery resumes.
    let listener = std::net::TcpListener::bind(address).unwrap();
    let deadline = Instant::now() + MAX_BACKOFF + Duration::from_secs(3);
    loop {
        if out.write_line(BLOCKED).is_ok() && out.flush().is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "reconnected within the backoff");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = vec![0u8; 4096];
    let n = conn.read(&mut got).unwrap();
    let text = std::str::from_utf8(&got[..n]).unwrap();
    let (len, rest) = text.split_once(' ').unwrap();
    assert_eq!(len.parse::<usize>().unwrap(), rest.len());
    assert!(rest.starts_with("<133>1 ") && rest.ends_with(BLOCKED));
    // The collector closes (a restart): the next burst reconnects at once.
    drop(conn);
    std::thread::sleep(Duration::from_millis(50));
    out.write_line(BLOCKED).unwrap();
    out.flush().unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = conn.read(&mut got).unwrap();
    assert!(n > 0);
}

#[test]
fn a_collector_that_reads_a_trickle_cannot_hold_a_burst_past_its_limit() {
    let collector =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    collector.set_recv_buffer_size(4096).expect("rcvbuf");
    collector
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .expect("bind");
    collector.listen(1).expect("listen");
    let address = collector
        .local_addr()
        .expect("addr")
        .as_socket()
        .expect("inet");
    let collector: std::net::TcpListener = collector.into();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = collector.accept() else {
            return;
        };
        let mut buf = [0u8; 64];
        // A little, often: every write call makes some progress.
        while matches!(std::io::Read::read(&mut s, &mut buf), Ok(n) if n > 0) {
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let mut stream = TcpStream::connect(address).expect("connect");
    let burst = vec![b'x'; 8 << 20];
    let error = write_within(&mut stream, &burst, Duration::from_millis(300))
        .expect_err("8 MiB cannot pass 6 KiB/s in 300 ms");
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
}
