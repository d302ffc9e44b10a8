//! Schema `pattern`s: the ECMA-262 screen and its cost bound (`inspect::pattern`).
//!
//! Oracles: never a panic; a pattern the screen accepts compiles in `regress`; a subject
//! within the pattern's bound is answered, and exactly as `regress` itself answers; a
//! subject past it is never run (`None`).

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use elicitgate_core::inspect::pattern::EcmaPattern;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let Ok(pattern) = String::arbitrary(&mut u) else { return };
    let Ok(subject) = String::arbitrary(&mut u) else { return };
    let Ok(compiled) = EcmaPattern::compile(&pattern) else { return };
    let direct = regress::Regex::with_flags(&pattern, "u").expect("accepted patterns compile");
    let within = subject.chars().count() <= compiled.max_subject();
    // Keep the fuzzer itself fast: only short subjects are run.
    if within && subject.chars().count() <= 64 {
        assert_eq!(compiled.test(&subject), Some(direct.find(&subject).is_some()));
    }
    if !within {
        assert_eq!(compiled.test(&subject), None);
    }
});
