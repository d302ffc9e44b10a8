//! `cargo bench --bench relay`: the per-message costs on the relay path, outside the
//! gateway: SSE framing (events handed out in place, and events split across small chunks),
//! the byte-level pre-scan that lets ordinary messages skip JSON parsing, and the envelope
//! peek every client message gets.

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use elicitgate::enforce::prescan::may_carry_elicitation;
use elicitgate_core::mcp::jsonrpc::Envelope;
use elicitgate_core::mcp::sse::SseDecoder;

/// A tools/call result of about 1 KiB of English-like text (what `bench_upstream` serves).
fn text_result(len: usize) -> Vec<u8> {
    const WORDS: &str = "the input was processed and the report is ready for review by the team ";
    let text: String = WORDS.chars().cycle().take(len).collect();
    format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{text}"}}],"isError":false}}}}"#).into_bytes()
}

/// `n` SSE events, each a JSON-RPC notification of about 200 bytes.
fn event_stream(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        out.extend_from_slice(
            format!("id: {i}\nevent: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"t-{i}\",\"progress\":{i},\"total\":1000,\"message\":\"step {i} of the long running job\"}}}}\n\n").as_bytes(),
        );
    }
    out
}

fn decode_all(stream: &Bytes, chunk: usize) -> usize {
    let mut decoder = SseDecoder::new(1 << 20);
    let mut events = 0;
    let mut at = 0;
    while at < stream.len() {
        let end = (at + chunk).min(stream.len());
        decoder.push_bytes(stream.slice(at..end));
        at = end;
        while let Ok(Some(event)) = decoder.next_event() {
            events += black_box(event).len().min(1);
        }
    }
    events
}

fn sse(c: &mut Criterion) {
    let stream = Bytes::from(event_stream(100));
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    // Chunks as a socket read hands them over: events come out as slices, no copy.
    group.bench_function("decode_100_events/16KiB_chunks", |b| {
        b.iter(|| assert_eq!(decode_all(black_box(&stream), 16 * 1024), 100))
    });
    // Events cut every 61 bytes: the reassembly path.
    group.bench_function("decode_100_events/61B_chunks", |b| {
        b.iter(|| assert_eq!(decode_all(black_box(&stream), 61), 100))
    });
    group.finish();
}

fn prescan(c: &mut Criterion) {
    let plain = text_result(1024);
    let large = text_result(1 << 20);
    let elicitation = br#"{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"mode":"form","message":"Pick one","requestedSchema":{"type":"object","properties":{}}}}"#;
    let mut group = c.benchmark_group("prescan");
    group.throughput(Throughput::Bytes(plain.len() as u64));
    group.bench_function("plain_result_1KiB", |b| {
        b.iter(|| assert!(!may_carry_elicitation(black_box(&plain))))
    });
    group.throughput(Throughput::Bytes(large.len() as u64));
    group.bench_function("plain_result_1MiB", |b| {
        b.iter(|| assert!(!may_carry_elicitation(black_box(&large))))
    });
    group.throughput(Throughput::Bytes(elicitation.len() as u64));
    group.bench_function("elicitation_request", |b| {
        b.iter(|| assert!(may_carry_elicitation(black_box(elicitation))))
    });
    group.finish();
}

fn peek(c: &mut Criterion) {
    let call = br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"small","arguments":{"query":"status of the nightly build"}}}"#;
    c.bench_function("envelope/peek_tools_call", |b| {
        b.iter(|| Envelope::peek(black_box(call)))
    });
}

criterion_group!(benches, sse, prescan, peek);
criterion_main!(benches);
