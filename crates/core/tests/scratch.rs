use elicitgate_core::lexicon::{Role, SecretLexicon};
#[test]
fn scratch() {
    let lex = SecretLexicon::builtin();
    for t in ["telephone pin", "Telephone PIN", "telephone_pin", "badge_pin", "Choose a 4-digit keypad PIN", "Telephone banking PIN"] {
        let (m, attr) = lex.scan_detail(t, Role::Label);
        println!("{t:?} => {:?} attr={attr}", m.map(|m| m.detector));
    }
}
