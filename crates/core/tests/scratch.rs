use elicitgate_core::lexicon::{Role, SecretLexicon};
#[test]
fn scratch() {
    let lex = SecretLexicon::builtin();
    for t in std::env::var("T").unwrap().split(';') {
        let (m, attr) = lex.scan_detail(t, Role::Label);
        let (p, _) = lex.scan_detail(t, Role::Prose);
        println!("{t:?} => label {:?} attr={attr} prose {:?}", m.map(|m| m.detector), p.map(|m| m.detector));
    }
}
