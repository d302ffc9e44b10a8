//! Real TLS with generated certificates: termination on the client listener, and an https
//! upstream verified against a custom CA.

use crate::common::*;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use std::sync::Arc;

#[tokio::test]
async fn tls_termination_with_a_generated_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let upstream = MockUpstream::start(|seen| {
        assert_eq!(seen.headers["x-forwarded-proto"], "https");
        full(
            StatusCode::OK,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        )
    })
    .await;
    let tls = format!(
        "tls: {{ cert_file: \"{}\", key_file: \"{}\" }}",
        pki.cert_file.display(),
        pki.key_file.display()
    );
    let gw = gateway(&config_for(&upstream.url("/mcp"), &tls)).await;
    let tls_client = https_client(&pki.ca_pem);
    for host in ["localhost", "127.0.0.1"] {
        let req = Request::post(format!("https://{host}:{}/mcp", gw.addr.port()))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            )))
            .unwrap();
        let response = tls_client.request(req).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(json(&body)["id"], 1);
    }
    // A plain-HTTP client gets nothing useful from a TLS listener.
    let plain = client()
        .request(rpc_post(&format!("http://{}/mcp", gw.addr), "{}"))
        .await;
    assert!(plain.is_err());
    gw.shutdown().await;
}

#[tokio::test]
async fn https_upstream_verified_with_a_custom_ca() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let server_config = elicitgate::tls::server_config(
        elicitgate::tls::ServingCert::load(&pki.cert_file, &pki.key_file).unwrap(),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config));
    let upstream = MockUpstream::start_with_tls(
        |_| {
            full(
                StatusCode::OK,
                "application/json",
                r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#,
            )
        },
        Some(acceptor),
    )
    .await;
    let https_url = format!("https://localhost:{}/mcp", upstream.addr.port());

    // Trusted through ca_file: works.
    let yaml = format!(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes:\n  - name: secure\n    path: /mcp\n    upstream: \"{https_url}\"\n    ca_file: \"{}\"\n",
        pki.ca_file.display()
    );
    let gw = gateway(&yaml).await;
    let (status, _, body) = send(rpc_post(
        &format!("http://{}/mcp", gw.addr),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json(&body)["result"]["ok"], true);
    gw.shutdown().await;

    // Without the CA the upstream is not trusted: 502, never a silent downgrade.
    let gw = gateway(&config_for(&https_url, "")).await;
    let (status, _, body) = send(rpc_post(
        &format!("http://{}/mcp", gw.addr),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    ))
    .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(json(&body)["id"], 2);
    gw.shutdown().await;
}

/// An HTTP/2 connection over TLS with no request in flight is closed after
/// `timeouts.client_idle` (hyper never closes an idle HTTP/2 connection by itself).
#[tokio::test]
async fn idle_http2_connections_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let upstream = MockUpstream::start(|_| {
        full(
            StatusCode::OK,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        )
    })
    .await;
    let extra = format!(
        "tls: {{ cert_file: \"{}\", key_file: \"{}\" }}\ntimeouts: {{ client_idle: 500ms }}",
        pki.cert_file.display(),
        pki.key_file.display()
    );
    let gw = gateway(&config_for(&upstream.url("/mcp"), &extra)).await;
    let mut config = client_config(&pki.ca_pem);
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    let conn = tokio::spawn(conn);
    let req = Request::post(format!("https://localhost:{}/mcp", gw.addr.port()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        )))
        .unwrap();
    let response = send.send_request(req).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.into_body().collect().await.unwrap();
    // Idle now: the gateway closes the connection (a generous ceiling, not a timing test).
    let closed = tokio::time::timeout(std::time::Duration::from_secs(15), conn).await;
    assert!(closed.is_ok(), "the idle HTTP/2 connection is still open");
    gw.shutdown().await;
}

/// An HTTP/2 peer that sends its preface and an empty SETTINGS frame and then nothing (never
/// acknowledging the server's SETTINGS, never answering GOAWAY) is cut after
/// `timeouts.client_idle`, and once more that long for the graceful close it never finishes.
#[tokio::test]
async fn an_http2_peer_stalled_in_its_handshake_is_cut() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let upstream = MockUpstream::start(|_| full(StatusCode::OK, "application/json", "{}")).await;
    let extra = format!(
        "tls: {{ cert_file: \"{}\", key_file: \"{}\" }}\ntimeouts: {{ client_idle: 500ms }}",
        pki.cert_file.display(),
        pki.key_file.display()
    );
    let gw = gateway(&config_for(&upstream.url("/mcp"), &extra)).await;
    let mut config = client_config(&pki.ca_pem);
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    tls.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    tls.flush().await.unwrap();
    // Read whatever the server sends (its SETTINGS, a GOAWAY) until it closes the connection.
    let closed = tokio::time::timeout(std::time::Duration::from_secs(15), async {
        let mut buf = [0u8; 4096];
        loop {
            match tls.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the stalled HTTP/2 connection is still open"
    );
    gw.shutdown().await;
}
