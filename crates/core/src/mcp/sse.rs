//! Incremental Server-Sent Events framing.
//!
//! Owns splitting an SSE byte stream into events *as the bytes arrive*, whatever the chunk
//! boundaries, and parsing the fields of one event. It never changes bytes: every event is
//! handed out as the exact slice of the stream that carried it (its field lines plus the blank
//! line that ended it), so relaying the events back to back reproduces the stream byte for
//! byte. Lines may end in CRLF, LF or CR (WHATWG HTML §9.2.5); a CR that ends one chunk and an
//! LF that starts the next are one line ending, handled without waiting for the next chunk.
//!
//! One exception to "byte for byte": a UTF-8 byte-order mark at the very start of the stream is
//! removed, as WHATWG's decoding (and the TypeScript SDK's `TextDecoderStream`) removes it;
//! left in, it would make the first field `\u{FEFF}data` to the gateway and `data` to a client.
//!
//! Bounded: an event that grows past `max_event_bytes` without ending is an error
//! ([`SseError::EventTooLarge`]), never an unbounded buffer. "Incomplete" (need more bytes) is
//! `Ok(None)`, distinct from that error.

use bytes::{Bytes, BytesMut};
use std::borrow::Cow;

/// Framing failure of an SSE stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// An event grew past the configured bound before its terminating blank line arrived.
    #[error("SSE event exceeds {limit} bytes")]
    EventTooLarge { limit: usize },
}

/// Splits an SSE byte stream into raw events.
///
/// Zero-copy on the common path: a chunk pushed with [`SseDecoder::push_bytes`] while nothing
/// is buffered is scanned in place and its complete events are handed out as slices of it;
/// only the unfinished tail of a chunk is copied (into `buf`), to be completed by later chunks.
#[derive(Debug)]
pub struct SseDecoder {
    /// An unfinished event carried across chunks.
    buf: BytesMut,
    /// A chunk being scanned in place (only while `buf` is empty).
    chunk: Bytes,
    scan: Scan,
    max_event_bytes: usize,
    /// Bytes seen at the start of the stream while they may still be a BOM; `None` once
    /// decided.
    start: Option<Vec<u8>>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Where scanning of the current data stands.
#[derive(Debug, Default, Clone, Copy)]
struct Scan {
    /// Next byte not yet scanned for line endings.
    pos: usize,
    /// Start of the line being scanned.
    line_start: usize,
    /// The last byte scanned was a CR at the end of the data: an LF that comes next belongs
    /// to the same line ending.
    after_cr: bool,
}

impl Scan {
    /// Scans `data` for the blank line that ends the event starting at `data[0]`; returns the
    /// event's length when found.
    fn event_end(&mut self, data: &[u8]) -> Option<usize> {
        loop {
            if self.after_cr && self.pos < data.len() {
                self.after_cr = false;
                if data[self.pos] == b'\n' {
                    // Second half of a CRLF split across chunks. When the CR closed an event,
                    // this LF opens the next raw slice; parsing skips it as an empty line.
                    self.pos += 1;
                    self.line_start = self.pos;
                    continue;
                }
            }
            let Some(offset) = memchr::memchr2(b'\r', b'\n', &data[self.pos..]) else {
                self.pos = data.len();
                return None;
            };
            let at = self.pos + offset;
            let end = match data[at] {
                b'\r' if at + 1 < data.len() && data[at + 1] == b'\n' => at + 2,
                b'\r' => {
                    self.after_cr = at + 1 == data.len();
                    at + 1
                }
                _ => at + 1,
            };
            let blank = at == self.line_start;
            self.pos = end;
            self.line_start = end;
            if blank {
                self.pos = 0;
                self.line_start = 0;
                return Some(end);
            }
        }
    }
}

impl SseDecoder {
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            buf: BytesMut::new(),
            chunk: Bytes::new(),
            scan: Scan::default(),
            max_event_bytes,
            start: Some(Vec::new()),
        }
    }

    /// Appends bytes received from the stream (copying them).
    pub fn push(&mut self, chunk: &[u8]) {
        self.push_bytes(Bytes::copy_from_slice(chunk));
    }

    /// Appends a chunk received from the stream, without copying it when nothing is buffered.
    pub fn push_bytes(&mut self, mut chunk: Bytes) {
        if let Some(held) = &mut self.start {
            let take = (BOM.len() - held.len()).min(chunk.len());
            held.extend_from_slice(&chunk[..take]);
            if !BOM.starts_with(held) {
                // Not a BOM: what was held is the stream's first bytes (all of them from this
                // chunk, usually: then the chunk goes on uncopied).
                if held.len() > take {
                    let mut joined = BytesMut::with_capacity(held.len() + chunk.len() - take);
                    joined.extend_from_slice(held);
                    joined.extend_from_slice(&chunk[take..]);
                    chunk = joined.freeze();
                }
                self.start = None;
            } else if held.len() == BOM.len() {
                chunk = chunk.slice(take..);
                self.start = None;
            } else {
                return;
            }
        }
        if chunk.is_empty() {
            return;
        }
        if self.buf.is_empty() && self.chunk.is_empty() {
            self.chunk = chunk;
        } else {
            self.spill();
            self.buf.extend_from_slice(&chunk);
        }
    }

    /// Moves the in-place chunk into `buf` (scan positions stay valid: both start at the
    /// same byte).
    fn spill(&mut self) {
        if !self.chunk.is_empty() {
            self.buf.extend_from_slice(&self.chunk);
            self.chunk = Bytes::new();
        }
    }

    /// Bytes held for events not handed out yet.
    pub fn buffered(&self) -> usize {
        self.buf.len() + self.chunk.len() + self.start.as_ref().map_or(0, Vec::len)
    }

    fn too_large(&self, len: usize) -> Result<(), SseError> {
        if len > self.max_event_bytes {
            Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            })
        } else {
            Ok(())
        }
    }

    /// Returns the next complete event's raw bytes, `Ok(None)` when more bytes are needed.
    pub fn next_event(&mut self) -> Result<Option<Bytes>, SseError> {
        if !self.chunk.is_empty() {
            match self.scan.event_end(&self.chunk) {
                Some(end) => {
                    self.too_large(end)?;
                    let event = self.chunk.slice(..end);
                    self.chunk = self.chunk.slice(end..);
                    return Ok(Some(event));
                }
                // The chunk ends mid-event: keep its tail for the next chunk.
                None => self.spill(),
            }
        }
        match self.scan.event_end(&self.buf) {
            Some(end) => {
                self.too_large(end)?;
                Ok(Some(self.buf.split_to(end).freeze()))
            }
            None => self.too_large(self.buf.len()).map(|()| None),
        }
    }

    /// Ends the stream: whatever was buffered for an unfinished event, unchanged.
    pub fn finish(&mut self) -> Option<Bytes> {
        if let Some(held) = self.start.take() {
            // A stream shorter than a BOM: its bytes are data.
            self.buf.extend_from_slice(&held);
        }
        self.spill();
        self.scan = Scan::default();
        (!self.buf.is_empty()).then(|| self.buf.split().freeze())
    }
}

/// The fields of one event, borrowed from its raw bytes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SseFields<'a> {
    /// `event:` (last one wins), `None` means the default type `message`.
    pub event: Option<&'a [u8]>,
    /// `id:` (last one wins).
    pub id: Option<&'a [u8]>,
    /// `retry:` as written.
    pub retry: Option<&'a [u8]>,
    /// `data:` lines joined with `\n`; `None` when the event had no `data` field.
    pub data: Option<Cow<'a, [u8]>>,
}

impl<'a> SseFields<'a> {
    /// Parses one raw event as produced by [`SseDecoder`]. Comment lines and unknown fields are
    /// ignored, as the SSE specification says.
    pub fn parse(raw: &'a [u8]) -> Self {
        let mut fields = SseFields::default();
        for line in lines(raw) {
            if line.is_empty() || line[0] == b':' {
                continue;
            }
            let (name, value) = match memchr::memchr(b':', line) {
                Some(i) => {
                    let v = &line[i + 1..];
                    (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
                }
                None => (line, &b""[..]),
            };
            match name {
                b"event" => fields.event = Some(value),
                b"id" if memchr::memchr(0, value).is_none() => fields.id = Some(value),
                b"retry" => fields.retry = Some(value),
                b"data" => {
                    fields.data = Some(match fields.data.take() {
                        None => Cow::Borrowed(value),
                        Some(prev) => {
                            let mut joined = prev.into_owned();
                            joined.push(b'\n');
                            joined.extend_from_slice(value);
                            Cow::Owned(joined)
                        }
                    })
                }
                _ => {}
            }
        }
        fields
    }

    /// True when an MCP client acts on this event: its type is absent, empty or `message`
    /// (both SDKs; other types are ignored by them).
    pub fn is_message(&self) -> bool {
        matches!(self.event, None | Some(b"") | Some(b"message"))
    }

    /// True when the event carries data that a client would dispatch.
    pub fn has_data(&self) -> bool {
        self.data.as_deref().is_some_and(|d| !d.is_empty())
    }
}

/// Splits on CRLF, LF or CR.
fn lines(raw: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = raw;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match memchr::memchr2(b'\r', b'\n', rest) {
            None => {
                let line = rest;
                rest = &[];
                Some(line)
            }
            Some(i) => {
                let line = &rest[..i];
                let skip = if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                rest = &rest[i + skip..];
                Some(line)
            }
        }
    })
}

/// Encodes one event. Multi-line data becomes several `data:` lines so that a client joining
/// them gets `data` back exactly.
pub fn encode_event(event: Option<&str>, id: Option<&str>, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + 32);
    if let Some(event) = event {
        out.push_str("event: ");
        out.push_str(event);
        out.push('\n');
    }
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(id);
        out.push('\n');
    }
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

#[cfg(test)]
mod tests;
