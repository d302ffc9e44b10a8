//! `SseDecoder` + `SseFields::parse` against a reference event-stream interpreter.
//!
//! Input layout: `[flags, nsplit, small_limit, split_0 .. split_{nsplit-1}, stream…]`. The
//! stream is pushed in chunks whose lengths cycle through the split bytes (0 = an empty
//! chunk), alternately copied (`push`) or as slices of one shared buffer (`push_bytes`, the
//! zero-copy path), draining after every chunk or only every few chunks.
//!
//! Oracle (large bound): the decoder never errors; the fields of its events equal the
//! reference's blocks one by one, whatever the chunking; the fields of the `finish()` tail
//! equal the reference's unterminated block; the raw events followed by the tail are the
//! input byte for byte; `buffered()` is what was pushed minus what was handed out.
//! Oracle (small bound): never panics; an error happens exactly when some block (or the tail)
//! is at least as long as the bound (±1 byte for a CR/LF pair split across chunks), and the
//! events before it agree with the reference.
#![no_main]

use bytes::Bytes;
use elicitgate_core::mcp::sse::{SseDecoder, SseFields};
use libfuzzer_sys::fuzz_target;

/// Does the decoder strip one leading UTF-8 BOM (WHATWG "UTF-8 decode")? Set from what
/// `crates/core/src/mcp/sse.rs` documents; the reference does the same.
const STRIPS_BOM: bool = true;
const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Debug, Default, PartialEq, Eq, Clone)]
struct Fields {
    event: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    retry: Option<Vec<u8>>,
    data: Option<Vec<u8>>,
}

impl Fields {
    fn of(f: &SseFields<'_>) -> Fields {
        Fields {
            event: f.event.map(<[u8]>::to_vec),
            id: f.id.map(<[u8]>::to_vec),
            retry: f.retry.map(<[u8]>::to_vec),
            data: f.data.as_deref().map(<[u8]>::to_vec),
        }
    }

    /// WHATWG "process the field".
    fn line(&mut self, line: &[u8]) {
        if line.first() == Some(&b':') {
            return; // comment
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], if v.first() == Some(&b' ') { &v[1..] } else { v })
            }
            None => (line, &line[line.len()..]),
        };
        match name {
            b"event" => self.event = Some(value.to_vec()),
            b"data" => match &mut self.data {
                None => self.data = Some(value.to_vec()),
                Some(d) => {
                    d.push(b'\n');
                    d.extend_from_slice(value);
                }
            },
            b"id" => {
                if !value.contains(&0) {
                    self.id = Some(value.to_vec())
                }
            }
            b"retry" => self.retry = Some(value.to_vec()),
            _ => {}
        }
    }
}

/// The reference: the whole stream in one piece. Returns the dispatched blocks with their raw
/// lengths, the pending (unterminated) block's fields (its unterminated last line counted as
/// a line, as a lenient client reads it at end of stream), and the tail's raw length.
fn reference(stream: &[u8]) -> (Vec<(Fields, usize)>, Fields, usize) {
    let mut blocks = Vec::new();
    let mut cur = Fields::default();
    let mut block_start = 0;
    let mut i = 0;
    loop {
        let rest = &stream[i..];
        let Some(off) = rest.iter().position(|&b| b == b'\r' || b == b'\n') else {
            if !rest.is_empty() {
                cur.line(rest);
            }
            return (blocks, cur, stream.len() - block_start);
        };
        let line = &rest[..off];
        let eol = if rest[off] == b'\r' && rest.get(off + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        i += off + eol;
        if line.is_empty() {
            blocks.push((std::mem::take(&mut cur), i - block_start));
            block_start = i;
        } else {
            cur.line(line);
        }
    }
}

struct Run {
    events: Vec<Bytes>,
    tail: Option<Bytes>,
    error: bool,
}

fn drive(stream: &[u8], splits: &[u8], flags: u8, limit: usize) -> Run {
    let shared = Bytes::copy_from_slice(stream);
    let mut dec = SseDecoder::new(limit);
    let mut run = Run {
        events: Vec::new(),
        tail: None,
        error: false,
    };
    let (mut pushed, mut handed) = (0usize, 0usize);
    // Bytes the decoder drops: a leading BOM, once all three bytes have arrived.
    let dropped = |pushed: usize| {
        if STRIPS_BOM && pushed >= BOM.len() && stream.starts_with(BOM) {
            BOM.len()
        } else {
            0
        }
    };
    let mut pos = 0;
    let mut k = 0usize;
    let mut last_empty = false;
    let drain_every = 1 + ((flags >> 2) & 3) as usize;
    let drain = |dec: &mut SseDecoder, run: &mut Run, handed: &mut usize| -> bool {
        loop {
            match dec.next_event() {
                Ok(Some(ev)) => {
                    *handed += ev.len();
                    run.events.push(ev);
                }
                Ok(None) => return true,
                Err(_) => {
                    run.error = true;
                    return false;
                }
            }
        }
    };
    while pos < stream.len() {
        let mut len = if splits.is_empty() {
            stream.len()
        } else {
            splits[k % splits.len()] as usize
        };
        if len == 0 && last_empty {
            len = 1;
        }
        last_empty = len == 0;
        let end = (pos + len).min(stream.len());
        let copy = if flags & 1 != 0 { k % 2 == 0 } else { flags & 2 != 0 };
        if copy {
            dec.push(&stream[pos..end]);
        } else {
            dec.push_bytes(shared.slice(pos..end));
        }
        pushed += end - pos;
        pos = end;
        k += 1;
        if k % drain_every == 0 {
            if !drain(&mut dec, &mut run, &mut handed) {
                return run;
            }
            assert_eq!(
                dec.buffered(),
                pushed - handed - dropped(pushed),
                "buffered() after draining"
            );
        }
    }
    if !drain(&mut dec, &mut run, &mut handed) {
        return run;
    }
    assert_eq!(
        dec.buffered(),
        pushed - handed - dropped(pushed),
        "buffered() at end"
    );
    run.tail = dec.finish();
    assert_eq!(dec.buffered(), 0, "buffered() after finish");
    assert!(dec.finish().is_none(), "finish() twice");
    run
}

fuzz_target!(|input: &[u8]| {
    let (flags, rest) = input.split_first().map_or((0, input), |(f, r)| (*f, r));
    let (nsplit, rest) = rest.split_first().map_or((0, rest), |(n, r)| (*n % 16, r));
    let (small, rest) = rest.split_first().map_or((1, rest), |(s, r)| (*s, r));
    let nsplit = (nsplit as usize).min(rest.len());
    let (splits, stream) = rest.split_at(nsplit);

    let body = if STRIPS_BOM {
        stream.strip_prefix(BOM).unwrap_or(stream)
    } else {
        stream
    };
    let (blocks, pending, tail_len) = reference(body);

    // Large bound: must agree with the reference, whatever the chunking.
    let run = drive(stream, splits, flags, stream.len() + 1);
    assert!(!run.error, "error with a bound larger than the stream");
    let got: Vec<Fields> = run
        .events
        .iter()
        .map(|e| Fields::of(&SseFields::parse(e)))
        .collect();
    let want: Vec<Fields> = blocks.iter().map(|(f, _)| f.clone()).collect();
    assert_eq!(got, want, "events differ from the reference");
    let tail_fields = run
        .tail
        .as_deref()
        .map(|t| Fields::of(&SseFields::parse(t)))
        .unwrap_or_default();
    assert_eq!(tail_fields, pending, "finish() tail differs from the reference");
    let mut concat: Vec<u8> = run.events.iter().flat_map(|e| e.iter().copied()).collect();
    concat.extend_from_slice(run.tail.as_deref().unwrap_or_default());
    assert_eq!(concat, body, "raw events are not the stream (less a leading BOM)");
    assert!(run.events.iter().all(|e| !e.is_empty()), "an empty raw event");

    // Small bound: error exactly when a block is too long; agreement before that.
    let limit = small as usize + 1;
    let run = drive(stream, splits, flags, limit);
    for (i, e) in run.events.iter().enumerate() {
        assert!(e.len() <= limit, "an event longer than the bound was handed out");
        assert_eq!(Fields::of(&SseFields::parse(e)), blocks[i].0, "event {i} (small bound)");
    }
    let longest = blocks
        .iter()
        .map(|(_, n)| *n)
        .chain(std::iter::once(tail_len))
        .max()
        .unwrap_or(0);
    if run.error {
        assert!(longest >= limit, "EventTooLarge though no block reaches the bound");
    } else {
        // A stream shorter than a BOM that could still be one is held aside, not buffered:
        // it is never checked against the bound (at most two bytes).
        let held = STRIPS_BOM && stream.len() < BOM.len() && BOM.starts_with(stream);
        assert!(
            blocks.iter().all(|(_, n)| *n <= limit + 1) && (tail_len <= limit || held),
            "no EventTooLarge though a block exceeds the bound"
        );
        assert_eq!(run.events.len(), blocks.len());
    }
});
