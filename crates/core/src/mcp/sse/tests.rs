use super::*;
use proptest::prelude::*;

/// Feeds `stream` split at `cuts` and returns every raw slice handed out, the trailing
/// remainder included.
fn decode_split(stream: &[u8], cuts: &[usize], max: usize) -> Result<Vec<Bytes>, SseError> {
    let mut decoder = SseDecoder::new(max);
    let mut out = Vec::new();
    let mut start = 0;
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    points.sort_unstable();
    points.push(stream.len());
    for end in points {
        decoder.push(&stream[start..end]);
        start = end;
        while let Some(event) = decoder.next_event()? {
            out.push(event);
        }
    }
    out.extend(decoder.finish());
    Ok(out)
}

/// (event, id, data) of one dispatched event.
type Meaning = (Option<Vec<u8>>, Option<Vec<u8>>, Vec<u8>);

/// The dispatched meaning of a stream: every event that has data.
fn meaning(raws: &[Bytes]) -> Vec<Meaning> {
    raws.iter()
        .filter_map(|raw| {
            let f = SseFields::parse(raw);
            let data = f.data?.into_owned();
            Some((f.event.map(<[u8]>::to_vec), f.id.map(<[u8]>::to_vec), data))
        })
        .collect()
}

#[test]
fn splits_events_on_blank_lines() {
    let stream = b"event: message\nid: 1\ndata: {\"a\":1}\n\ndata: two\n\n";
    let raws = decode_split(stream, &[], 1024).unwrap();
    assert_eq!(raws.len(), 2);
    assert_eq!(
        &raws[0][..],
        &b"event: message\nid: 1\ndata: {\"a\":1}\n\n"[..]
    );
    let f = SseFields::parse(&raws[0]);
    assert_eq!(f.event, Some(&b"message"[..]));
    assert_eq!(f.id, Some(&b"1"[..]));
    assert_eq!(f.data.as_deref(), Some(&b"{\"a\":1}"[..]));
}

#[test]
fn multi_line_data_is_joined_with_newlines() {
    let raws = decode_split(b"data: a\ndata:b\r\ndata:  c\r\r", &[], 1024).unwrap();
    assert_eq!(raws.len(), 1);
    let f = SseFields::parse(&raws[0]);
    assert_eq!(f.data.as_deref(), Some(&b"a\nb\n c"[..]));
}

#[test]
fn comments_and_priming_events_carry_no_data() {
    let raws = decode_split(
        b": keep-alive\n\nid: 7\ndata: \n\nretry: 500\n\n",
        &[],
        1024,
    )
    .unwrap();
    assert_eq!(raws.len(), 3);
    assert!(!SseFields::parse(&raws[0]).has_data());
    let priming = SseFields::parse(&raws[1]);
    assert_eq!(priming.id, Some(&b"7"[..]));
    assert!(!priming.has_data());
    assert_eq!(SseFields::parse(&raws[2]).retry, Some(&b"500"[..]));
}

#[test]
fn event_is_ready_before_next_chunk_even_when_crlf_is_split() {
    let mut decoder = SseDecoder::new(1024);
    decoder.push(b"data: x\r\n\r");
    let first = decoder
        .next_event()
        .unwrap()
        .expect("event ended by CR is complete");
    assert_eq!(&first[..], &b"data: x\r\n\r"[..]);
    decoder.push(b"\ndata: y\r\n\r\n");
    let second = decoder.next_event().unwrap().unwrap();
    assert_eq!(&second[..], &b"\ndata: y\r\n\r\n"[..]);
    assert_eq!(SseFields::parse(&second).data.as_deref(), Some(&b"y"[..]));
}

#[test]
fn incomplete_event_waits_for_more_bytes() {
    let mut decoder = SseDecoder::new(1024);
    decoder.push(b"data: partial");
    assert_eq!(decoder.next_event(), Ok(None));
    decoder.push(b"\n");
    assert_eq!(decoder.next_event(), Ok(None));
    decoder.push(b"\n");
    assert!(decoder.next_event().unwrap().is_some());
}

#[test]
fn oversized_event_is_an_error_not_incomplete() {
    let mut decoder = SseDecoder::new(16);
    decoder.push(b"data: 0123456789abcdef");
    assert_eq!(
        decoder.next_event(),
        Err(SseError::EventTooLarge { limit: 16 })
    );
    let mut decoder = SseDecoder::new(16);
    decoder.push(b"data: 0123456789\ndata: x\n\n");
    assert_eq!(
        decoder.next_event(),
        Err(SseError::EventTooLarge { limit: 16 })
    );
}

#[test]
fn encode_round_trips_multi_line_data() {
    let raw = encode_event(Some("message"), Some("9"), "{\"a\":\n1}");
    let f = SseFields::parse(&raw);
    assert_eq!(f.data.as_deref(), Some(&b"{\"a\":\n1}"[..]));
    assert_eq!(f.event, Some(&b"message"[..]));
    assert_eq!(f.id, Some(&b"9"[..]));
}

fn sse_stream() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        "[a-z{}\":, ]{0,12}".prop_map(|v| format!("data: {v}")),
        "[a-z]{0,6}".prop_map(|v| format!("event: {v}")),
        "[0-9]{1,3}".prop_map(|v| format!("id: {v}")),
        "[ -~]{0,8}".prop_map(|v| format!(":{v}")),
        Just("data".to_string()),
        Just("retry: 100".to_string()),
    ];
    let eol = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    let line = (field, eol.clone()).prop_map(|(f, e)| format!("{f}{e}"));
    let event = (proptest::collection::vec(line, 0..5), eol).prop_map(|(ls, e)| ls.concat() + e);
    proptest::collection::vec(event, 0..8).prop_map(|evs| evs.concat().into_bytes())
}

proptest! {
    #[test]
    fn any_split_yields_the_same_events_and_identical_bytes(
        stream in sse_stream(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = decode_split(&stream, &[], usize::MAX).unwrap();
        let split = decode_split(&stream, &cuts, usize::MAX).unwrap();
        prop_assert_eq!(whole.concat(), stream.clone());
        prop_assert_eq!(split.concat(), stream);
        prop_assert_eq!(meaning(&whole), meaning(&split));
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_are_forwarded_unchanged(
        stream in proptest::collection::vec(any::<u8>(), 0..512),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let raws = decode_split(&stream, &cuts, usize::MAX).unwrap();
        // Byte for byte, but for one leading BOM.
        let expected = stream.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&stream);
        prop_assert_eq!(raws.concat(), expected.to_vec());
    }

    #[test]
    fn a_leading_bom_is_removed_whatever_the_chunking(
        stream in sse_stream(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut with_bom = b"\xEF\xBB\xBF".to_vec();
        with_bom.extend_from_slice(&stream);
        let split = decode_split(&with_bom, &cuts, usize::MAX).unwrap();
        prop_assert_eq!(split.concat(), stream.clone());
        prop_assert_eq!(meaning(&split), meaning(&decode_split(&stream, &[], usize::MAX).unwrap()));
    }
}

#[test]
fn a_bom_makes_the_first_field_data_not_a_stranger() {
    // TypeScript's client strips the BOM and reads this event; the gateway must too.
    for cut in 0..6 {
        let stream = b"\xEF\xBB\xBFdata: x\n\n";
        let raws = decode_split(stream, &[cut], 1024).unwrap();
        let fields = SseFields::parse(&raws[0]);
        assert_eq!(fields.data.as_deref(), Some(&b"x"[..]), "cut at {cut}");
    }
    // Only at the start, only once, and a near-BOM is data.
    let raws = decode_split(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n", &[], 1024).unwrap();
    assert_eq!(SseFields::parse(&raws[0]).data, None);
    let raws = decode_split(b"\xEF\xBB", &[1], 1024).unwrap();
    assert_eq!(raws.concat(), b"\xEF\xBB");
}

#[test]
fn event_types_clients_act_on() {
    for (raw, message) in [
        (&b"data: x\n\n"[..], true),
        (b"event: message\ndata: x\n\n", true),
        (b"event:\ndata: x\n\n", true),
        (b"event: foo\nevent:\ndata: x\n\n", true),
        (b"event: foo\ndata: x\n\n", false),
        (b"event: Message\ndata: x\n\n", false),
        (b"event: message \ndata: x\n\n", false),
    ] {
        assert_eq!(
            SseFields::parse(raw).is_message(),
            message,
            "{}",
            String::from_utf8_lossy(raw)
        );
    }
}

#[test]
fn whole_events_in_a_chunk_are_handed_out_without_copying() {
    let chunk = Bytes::from_static(b"data: a\n\ndata: b\n\ndata: partial");
    let range = chunk.as_ptr() as usize..chunk.as_ptr() as usize + chunk.len();
    let mut decoder = SseDecoder::new(1024);
    decoder.push_bytes(chunk);
    for _ in 0..2 {
        let event = decoder.next_event().unwrap().unwrap();
        assert!(
            range.contains(&(event.as_ptr() as usize)),
            "event was copied"
        );
    }
    assert_eq!(decoder.next_event(), Ok(None));
    decoder.push_bytes(Bytes::from_static(b"\n\n"));
    assert_eq!(
        &decoder.next_event().unwrap().unwrap()[..],
        b"data: partial\n\n"
    );
}
