//! Content decoding stage: undoes `Content-Encoding` so that later stages judge what a client
//! would read after its own decoding, and so that the client receives exactly the decoded bytes
//! the gateway judged (the gateway forwards decoded bodies and drops the coding header).
//!
//! Streaming and bounded by construction: the decoded body is pulled in chunks of at most
//! [`CHUNK`] bytes, so a decompression bomb costs one chunk at a time; callers bound the total
//! (the whole-body limit for JSON, the event limit for SSE). The codecs are
//! `async-compression`'s (flate2, brotli, zstd underneath); nothing here decodes by hand.
//!
//! Never: decides which codings are acceptable (that is [`crate::mcp::transport`]).

use super::transport::Coding;
use async_compression::tokio::bufread::{
    BrotliDecoder, DeflateDecoder, GzipDecoder, ZlibDecoder, ZstdDecoder,
};
use async_compression::zstd::DParameter;
use bytes::Bytes;
use futures_util::stream::{Stream, TryStreamExt};
use futures_util::TryFutureExt;
use std::io;
use std::pin::Pin;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio_util::io::{ReaderStream, StreamReader};

/// Largest zstd window accepted, as a power of two (8 MiB, RFC 9659 §3).
pub const ZSTD_WINDOW_LOG_MAX: u32 = 23;

/// Largest piece of decoded output produced at once.
pub const CHUNK: usize = 16 * 1024;

/// A decoded body: chunks of at most [`CHUNK`] bytes, or an error (a corrupt coding, or the
/// upstream body failing underneath).
pub type Decoded = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

type Reader = Pin<Box<dyn AsyncBufRead + Send>>;

/// Decodes `body` (a stream of raw frames) through `codings`, outermost first.
pub fn decode<S, E>(body: S, codings: Vec<Coding>) -> Decoded
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    let raw: Reader = Box::pin(StreamReader::new(body.map_err(io::Error::other)));
    let layered = async move {
        let mut reader = raw;
        for coding in codings {
            reader = layer(reader, coding).await?;
        }
        Ok::<_, io::Error>(ReaderStream::with_capacity(reader, CHUNK))
    };
    Box::pin(layered.try_flatten_stream())
}

/// One decoding layer over `inner`.
async fn layer(mut inner: Reader, coding: Coding) -> io::Result<Reader> {
    // An empty body is empty whatever its declared coding (a 202 or a drained stream sent with
    // `Content-Encoding: gzip`): clients read nothing, so there is nothing to decode or refuse.
    if inner.fill_buf().await?.is_empty() {
        return Ok(inner);
    }
    Ok(match coding {
        Coding::Gzip => {
            let mut d = GzipDecoder::new(inner);
            // Concatenated members are one body (as Node's zlib reads them).
            d.multiple_members(true);
            Box::pin(BufReader::new(d))
        }
        Coding::Deflate => {
            // RFC 9110 says zlib; some servers send raw deflate, and the clients accept both.
            // The forwarded body is the gateway's decoding either way, so the choice cannot
            // differ from what the client is given.
            // The first two bytes decide; they may arrive in separate frames.
            let mut head = Vec::with_capacity(2);
            while head.len() < 2 {
                let available = inner.fill_buf().await?;
                if available.is_empty() {
                    break;
                }
                let take = available.len().min(2 - head.len());
                head.extend_from_slice(&available[..take]);
                inner.consume(take);
            }
            let zlib = is_zlib_header(&head);
            let whole = std::io::Cursor::new(head).chain(inner);
            if zlib {
                Box::pin(BufReader::new(ZlibDecoder::new(whole)))
            } else {
                Box::pin(BufReader::new(DeflateDecoder::new(whole)))
            }
        }
        Coding::Brotli => Box::pin(BufReader::new(BrotliDecoder::new(inner))),
        Coding::Zstd => {
            // RFC 9659: HTTP zstd windows are at most 8 MiB; the library default (128 MiB per
            // stream) would let each hostile stream pin that much memory. Larger: a decode
            // error, so refused.
            let window = [DParameter::window_log_max(ZSTD_WINDOW_LOG_MAX)];
            let mut d = ZstdDecoder::with_params(inner, &window);
            d.multiple_members(true);
            Box::pin(BufReader::new(d))
        }
    })
}

/// RFC 1950 header: compression method 8 and a check value divisible by 31.
fn is_zlib_header(head: &[u8]) -> bool {
    match head {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_compression::tokio::write::{
        BrotliEncoder, DeflateEncoder, GzipEncoder, ZlibEncoder, ZstdEncoder,
    };
    use futures_util::StreamExt;
    use tokio::io::AsyncWriteExt;

    async fn encode(coding: &str, data: &[u8]) -> Vec<u8> {
        macro_rules! run {
            ($enc:expr) => {{
                let mut e = $enc;
                e.write_all(data).await.unwrap();
                e.shutdown().await.unwrap();
                e.into_inner()
            }};
        }
        match coding {
            "gzip" => run!(GzipEncoder::new(Vec::new())),
            "zlib" => run!(ZlibEncoder::new(Vec::new())),
            "raw" => run!(DeflateEncoder::new(Vec::new())),
            "br" => run!(BrotliEncoder::new(Vec::new())),
            "zstd" => run!(ZstdEncoder::new(Vec::new())),
            _ => unreachable!(),
        }
    }

    /// Feeds `bytes` in `split`-sized frames and collects the decoded chunks.
    async fn run(bytes: Vec<u8>, split: usize, codings: Vec<Coding>) -> io::Result<Vec<Bytes>> {
        let frames: Vec<Result<Bytes, io::Error>> = bytes
            .chunks(split.max(1))
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut out = decode(futures_util::stream::iter(frames), codings);
        let mut chunks = Vec::new();
        while let Some(chunk) = out.next().await {
            chunks.push(chunk?);
        }
        Ok(chunks)
    }

    #[tokio::test]
    async fn every_coding_round_trips_whatever_the_frame_boundaries() {
        let text = b"data: {\"jsonrpc\":\"2.0\",\"method\":\"elicitation/create\"}\n\n".repeat(50);
        for (name, coding) in [
            ("gzip", Coding::Gzip),
            ("zlib", Coding::Deflate),
            ("raw", Coding::Deflate),
            ("br", Coding::Brotli),
            ("zstd", Coding::Zstd),
        ] {
            let encoded = encode(name, &text).await;
            for split in [1, 7, 4096] {
                let out = run(encoded.clone(), split, vec![coding]).await.unwrap();
                assert_eq!(out.concat(), text, "{name} split {split}");
            }
        }
    }

    #[tokio::test]
    async fn stacked_codings_and_concatenated_members() {
        let text = b"{\"a\":1}".to_vec();
        let inner = encode("gzip", &text).await;
        let outer = encode("br", &inner).await;
        // Applied gzip then br: undone br first.
        let out = run(outer, 3, vec![Coding::Brotli, Coding::Gzip])
            .await
            .unwrap();
        assert_eq!(out.concat(), text);
        let mut two = encode("gzip", b"first ").await;
        two.extend(encode("gzip", b"second").await);
        assert_eq!(
            run(two, 5, vec![Coding::Gzip]).await.unwrap().concat(),
            b"first second"
        );
    }

    #[tokio::test]
    async fn a_bomb_arrives_one_bounded_chunk_at_a_time() {
        let zeros = vec![b' '; 8 * 1024 * 1024];
        let bomb = encode("gzip", &zeros).await;
        assert!(bomb.len() < 64 * 1024);
        let mut out = decode(
            futures_util::stream::iter(vec![Ok::<_, io::Error>(Bytes::from(bomb))]),
            vec![Coding::Gzip],
        );
        let mut total = 0;
        while let Some(chunk) = out.next().await {
            let chunk = chunk.unwrap();
            assert!(chunk.len() <= CHUNK);
            total += chunk.len();
        }
        assert_eq!(total, zeros.len());
    }

    #[tokio::test]
    async fn an_empty_body_is_empty_whatever_its_coding() {
        for coding in [Coding::Gzip, Coding::Deflate, Coding::Brotli, Coding::Zstd] {
            let out = run(Vec::new(), 1, vec![coding, Coding::Gzip])
                .await
                .unwrap();
            assert!(out.concat().is_empty(), "{coding:?}");
        }
    }

    #[tokio::test]
    async fn zstd_windows_beyond_8_mib_are_refused() {
        use async_compression::zstd::CParameter;
        let data = vec![b'a'; 64 * 1024];
        let encode_window = |log: u32| {
            let data = data.clone();
            async move {
                let mut e = ZstdEncoder::with_quality_and_params(
                    Vec::new(),
                    async_compression::Level::Default,
                    &[CParameter::window_log(log)],
                );
                e.write_all(&data).await.unwrap();
                e.shutdown().await.unwrap();
                e.into_inner()
            }
        };
        let small = encode_window(ZSTD_WINDOW_LOG_MAX).await;
        assert_eq!(
            run(small, 4096, vec![Coding::Zstd]).await.unwrap().concat(),
            data
        );
        let large = encode_window(ZSTD_WINDOW_LOG_MAX + 4).await;
        assert!(run(large, 4096, vec![Coding::Zstd]).await.is_err());
    }

    #[tokio::test]
    async fn corrupt_input_is_an_error_not_a_pass() {
        let mut gz = encode("gzip", b"{\"x\":1}").await;
        let last = gz.len() - 5;
        gz[last] ^= 0xff; // CRC
        assert!(run(gz, 4, vec![Coding::Gzip]).await.is_err());
        assert!(run(b"not gzip at all".to_vec(), 4, vec![Coding::Gzip])
            .await
            .is_err());
        // Truncated.
        let gz = encode("gzip", &b"x".repeat(1000)).await;
        assert!(run(gz[..gz.len() / 2].to_vec(), 4, vec![Coding::Gzip])
            .await
            .is_err());
    }
}
