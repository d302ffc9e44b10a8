use super::*;

fn d(s: &str) -> Vec<u8> {
    digits_of(s)
}

/// `s` with its last digit replaced by the next one (a wrong check digit).
fn wrong_check(s: &str) -> String {
    let mut out: Vec<char> = s.chars().collect();
    if let Some(c) = out.iter_mut().rev().find(|c| c.is_ascii_digit()) {
        *c = char::from(b'0' + (c.to_digit(10).unwrap_or(0) as u8 + 1) % 10);
    }
    out.into_iter().collect()
}

#[test]
fn brazil_cpf() {
    for v in ["52998224725", "11144477735", "39053344705", "00000000191"] {
        assert!(is_cpf(&d(v)), "{v}");
        assert!(!is_cpf(&d(&wrong_check(v))), "{v}");
    }
    assert!(!is_cpf(&d("11111111111")), "all same digit");
    assert!(!is_cpf(&d("5299822472")), "length");
    assert_eq!(scan_formatted("529.982.247-25"), Some("pii.national_id:br"));
    assert_eq!(scan_formatted("529982247-25"), Some("pii.national_id:br"));
    assert_eq!(scan_formatted("529.982.247-26"), None);
    assert_eq!(scan_formatted("52998224725"), None, "bare: needs a hint");
}

#[test]
fn poland_pesel() {
    for v in ["44051401359", "02272145672", "90830311119"] {
        assert!(is_pesel(&d(v)), "{v}");
        assert!(!is_pesel(&d(&wrong_check(v))), "{v}");
    }
    // Checksum right, month 13 (no century offset gives it).
    assert!(!is_pesel(&d("44131401350")));
    assert!(!is_pesel(&d("4405140135")));
}

#[test]
fn india_aadhaar() {
    for v in ["234123412346", "491827364553", "987654321096"] {
        assert!(is_aadhaar(&d(v)), "{v}");
        assert!(!is_aadhaar(&d(&wrong_check(v))), "{v}");
    }
    assert!(!is_aadhaar(&d("123412341234")), "starts with 1");
    assert_eq!(scan_formatted("2341 2341 2346"), Some("pii.national_id:in"));
    assert_eq!(scan_formatted("2341-2341-2346"), Some("pii.national_id:in"));
    assert_eq!(scan_formatted("2341 2341-2346"), None, "mixed separators");
}

#[test]
fn netherlands_bsn() {
    for v in ["111222333", "232262998", "123456782"] {
        assert!(is_bsn(&d(v)), "{v}");
        assert!(!is_bsn(&d(&wrong_check(v))), "{v}");
    }
    assert!(!is_bsn(&d("000000000")));
    assert_eq!(scan_formatted("1112.22.333"), Some("pii.national_id:nl"));
}

#[test]
fn turkey_tckn() {
    for v in ["10000000146", "34567890170", "29876543206"] {
        assert!(is_tckn(&d(v)), "{v}");
        assert!(!is_tckn(&d(&wrong_check(v))), "{v}");
    }
    assert!(!is_tckn(&d("01234567890")), "leading zero");
}

#[test]
fn china_resident_id() {
    for v in [
        "11010519491231002X",
        "440304199001011233",
        "320106198512123456",
    ] {
        assert!(is_cn(v), "{v}");
        assert_eq!(scan_formatted(v), Some("pii.national_id:cn"), "{v}");
    }
    assert!(is_cn("11010519491231002x"), "lower-case x");
    assert!(!is_cn("440304199001011234"));
    assert!(!is_cn("440304199013011238"), "month 13");
    assert!(!is_cn("940304199001011233"), "region");
}

#[test]
fn france_nir() {
    for v in [
        "184077645108963",
        "269029934173285",
        "184022B01234510",
        "280012A03512333",
    ] {
        assert!(is_nir(v), "{v}");
        assert!(!is_nir(&wrong_check(v)), "{v}");
        assert_eq!(scan_formatted(v), Some("pii.national_id:fr"), "{v}");
    }
    assert!(is_nir("1 84 07 76 451 089 63"));
    assert_eq!(
        scan_formatted("1 84 07 76 451 089 63"),
        Some("pii.national_id:fr")
    );
    assert!(!is_nir("584077645108963"), "sex digit");
    // Unknown month (30) and a temporary number (sex 3): valid, but only with a hint.
    for v in ["184307645108943", "384077645108960"] {
        assert!(is_nir(v), "{v}");
        assert_eq!(scan_formatted(v), None, "{v}");
        assert_eq!(
            scan_hinted(v, Hint::Kind(Kind::Fr)),
            Some("pii.national_id:fr")
        );
    }
    assert!(!is_nir("184137645108963"), "month 13");
}

#[test]
fn spain_dni_nie() {
    for v in [
        "12345678Z",
        "87654321X",
        "X1234567L",
        "Y7654321G",
        "Z1111111D",
    ] {
        assert!(is_dni_nie(v), "{v}");
        assert_eq!(scan_formatted(v), Some("pii.national_id:es"), "{v}");
    }
    assert!(is_dni_nie("12345678-Z"));
    assert!(is_dni_nie("X-1234567-L"));
    assert!(!is_dni_nie("12345678A"));
    assert!(!is_dni_nie("X1234567A"));
    assert!(!is_dni_nie("1234567Z"));
    assert_eq!(scan_formatted("12345678z"), None, "lower-case letter");
}

#[test]
fn italy_codice_fiscale() {
    for v in [
        "RSSMRA85T10A562S",
        "BNCLRA90A41F205I",
        "VRDGPP80E15H501Q",
        "RSSMRA85T10A56NH",
    ] {
        assert!(is_codice_fiscale(v), "{v}");
        assert_eq!(scan_formatted(v), Some("pii.national_id:it"), "{v}");
    }
    assert!(is_codice_fiscale("rssmra85t10a562s"), "lower case");
    assert!(!is_codice_fiscale("RSSMRA85T10A562T"), "check letter");
    assert!(!is_codice_fiscale("RSSMRA85F10A562S"), "F is no month");
    assert!(!is_codice_fiscale("RSSMRA85T35A562S"), "day 35");
}

#[test]
fn sweden_personnummer() {
    for v in ["811218-9876", "121212-1212", "900101-2344", "811278-9873"] {
        assert!(is_personnummer(&d(v)), "{v}");
        assert!(!is_personnummer(&d(&wrong_check(v))), "{v}");
        assert_eq!(scan_formatted(v), Some("pii.national_id:se"), "{v}");
    }
    assert!(is_personnummer(&d("19811218-9876")));
    assert_eq!(scan_formatted("19811218-9876"), Some("pii.national_id:se"));
    assert_eq!(scan_formatted("811218+9876"), Some("pii.national_id:se"));
    assert!(!is_personnummer(&d("811318-9874")), "month 13");
}

#[test]
fn finland_hetu() {
    for v in [
        "131052-308T",
        "010105A123P",
        "311299-8997",
        "150623B4565",
        "010190Y222U",
        "020398+456P",
    ] {
        assert!(is_hetu(v), "{v}");
        assert_eq!(scan_formatted(v), Some("pii.national_id:fi"), "{v}");
    }
    assert!(!is_hetu("131052-308U"), "check character");
    assert!(!is_hetu("131052G308T"), "century sign");
    assert!(!is_hetu("310252-308T"), "31 February");
    assert!(!is_hetu("131052-001T"), "individual number 001");
}

#[test]
fn norway_fodselsnummer() {
    for v in ["15078523422", "31129945616", "01010101197", "41019012393"] {
        assert!(is_fnr(&d(v)), "{v}");
        assert!(!is_fnr(&d(&wrong_check(v))), "{v}");
    }
    assert_eq!(scan_formatted("150785 23422"), Some("pii.national_id:no"));
    assert!(!is_fnr(&d("15138523422")), "month 13");
}

#[test]
fn denmark_cpr() {
    assert!(is_cpr_date(&d("0707614285")) && cpr_mod11(&d("0707614285")));
    assert!(is_cpr_date(&d("3112994504")) && cpr_mod11(&d("3112994504")));
    assert!(is_cpr_date(&d("0101901234")) && !cpr_mod11(&d("0101901234")));
    assert!(!is_cpr_date(&d("3202901234")), "32 February");
    // 070761-4285 also reads as a Swedish samordningsnummer (day 61): either is right.
    assert!(scan_formatted("070761-4285").is_some());
    assert_eq!(scan_formatted("311299-4504"), Some("pii.national_id:dk"));
    assert_eq!(scan_formatted("010190-1234"), None, "no mod 11, no hint");
    assert_eq!(
        scan_hinted("0101901234", Hint::Kind(Kind::Dk)),
        Some("pii.national_id:dk")
    );
    assert_eq!(scan_hinted("0101901234", Hint::Any), None);
}

#[test]
fn korea_rrn() {
    for v in ["900101-1234568", "850315-2123450", "031120-4556674"] {
        assert!(is_rrn(&d(v)), "{v}");
        assert!(!is_rrn(&d(&wrong_check(v))), "{v}");
        assert_eq!(scan_formatted(v), Some("pii.national_id:kr"), "{v}");
    }
    assert!(!is_rrn(&d("901301-1234565")), "month 13");
}

#[test]
fn israel_teudat_zehut() {
    for v in ["123456782", "034567891", "203040506"] {
        assert!(is_teudat_zehut(&d(v)), "{v}");
        assert!(!is_teudat_zehut(&d(&wrong_check(v))), "{v}");
    }
    assert!(is_teudat_zehut(&d("34567891")), "leading zero dropped");
    assert_eq!(
        scan_hinted("34567891", Hint::Kind(Kind::Il)),
        Some("pii.national_id:il")
    );
    assert_eq!(
        scan_hinted("34567891", Hint::Any),
        None,
        "short and generic"
    );
}

#[test]
fn romania_cnp() {
    for v in [
        "1960315123451",
        "2960315400121",
        "5010101100236",
        "7630405123455",
    ] {
        assert!(is_cnp(&d(v)), "{v}");
        assert!(!is_cnp(&d(&wrong_check(v))), "{v}");
    }
    assert!(!is_cnp(&d("1961315123451")), "month 13");
    assert!(!is_cnp(&d("1960315993451")), "county 99");
}

#[test]
fn south_africa_id() {
    for v in ["8001015009087", "9305210123083", "0104156001083"] {
        assert!(is_za(&d(v)), "{v}");
        assert!(!is_za(&d(&wrong_check(v))), "{v}");
    }
    assert_eq!(
        scan_formatted("800101 5009 087"),
        Some("pii.national_id:za")
    );
    assert!(!is_za(&d("8013015009087")), "month 13");
}

#[test]
fn thailand_id() {
    for v in ["1101700230074", "3100901234561"] {
        assert!(is_th(&d(v)), "{v}");
        assert!(!is_th(&d(&wrong_check(v))), "{v}");
    }
    assert_eq!(
        scan_formatted("1-1017-00230-07-4"),
        Some("pii.national_id:th")
    );
    assert_eq!(scan_formatted("1-1017-00230-07-5"), None);
    assert!(!is_th(&d("9101700230074")), "first digit 9");
}

#[test]
fn bare_numbers_need_a_hint() {
    for (v, kind) in [
        ("52998224725", Kind::Br),
        ("44051401359", Kind::Pl),
        ("234123412346", Kind::In),
        ("111222333", Kind::Nl),
        ("10000000146", Kind::Tr),
        ("8112189876", Kind::Se),
        ("15078523422", Kind::No),
        ("9001011234568", Kind::Kr),
        ("203040506", Kind::Il),
        ("1960315123451", Kind::Ro),
        ("8001015009087", Kind::Za),
        ("1101700230074", Kind::Th),
    ] {
        assert_eq!(scan_formatted(v), None, "{v}");
        assert_eq!(
            scan_hinted(v, Hint::Kind(kind)),
            Some(kind.detector()),
            "{v}"
        );
        assert_eq!(scan_hinted(v, Hint::Any), Some(kind.detector()), "{v}");
        assert_eq!(scan_hinted(&wrong_check(v), Hint::Kind(kind)), None, "{v}");
    }
    // A country hint checks that country only.
    assert_eq!(scan_hinted("44051401359", Hint::Kind(Kind::Br)), None);
    // Embedded in text, and all-same digits.
    assert_eq!(
        scan_hinted("cpf: 529.982.247-25 ok", Hint::Kind(Kind::Br)),
        Some("pii.national_id:br")
    );
    assert_eq!(scan_hinted("00000000000", Hint::Any), None);
}

#[test]
fn lookalikes_are_not_ids() {
    for v in [
        "1712345678",
        "1712345678901",
        "2024-01-15",
        "2024-01-15-1234",
        "20240115T103000",
        "v1.2.3",
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "550e8400-e29b-41d4-a716-446655440000",
        "order-12345678",
        "ABC12345678Z9",
        "release-2026.08.123",
    ] {
        assert_eq!(scan_formatted(v), None, "{v}");
    }
}

#[test]
fn name_hints() {
    assert_eq!(hint_for_name("cpf"), Some(Hint::Kind(Kind::Br)));
    assert_eq!(hint_for_name("userpesel"), Some(Hint::Kind(Kind::Pl)));
    assert_eq!(hint_for_name("nationalid"), Some(Hint::Any));
    assert_eq!(hint_for_name("customernationalid"), Some(Hint::Any));
    assert_eq!(hint_for_name("taxid"), Some(Hint::Any));
    assert_eq!(hint_for_name("id"), None);
    assert_eq!(hint_for_name("orderid"), None);
    assert_eq!(hint_for_name("orderidnumber"), None, "short generic suffix");
    assert_eq!(hint_in_text("CPF 52998224725"), Some(Hint::Kind(Kind::Br)));
    assert_eq!(hint_in_text("nie 12345678"), None, "ordinary word");
    assert_eq!(hint_in_text("12345678"), None);
}
