//! Promises the manifest and the docs make that the code can check: `rust-version` is at least
//! what every locked dependency declares it needs (a lower one tells users a toolchain works
//! when `cargo build` would refuse it), and the number of languages the docs claim for secret
//! detection is the built-in lexicon's.

use std::process::Command;

fn version(text: &str) -> Vec<u64> {
    text.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

#[test]
fn rust_version_covers_every_locked_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let ours = packages
        .iter()
        .find(|p| p["name"] == "elicitgate")
        .and_then(|p| p["rust_version"].as_str())
        .expect("elicitgate declares a rust-version");
    let needs: Vec<(String, &str)> = packages
        .iter()
        .filter_map(|p| Some((p["name"].as_str()?.to_owned(), p["rust_version"].as_str()?)))
        .filter(|(_, v)| version(v) > version(ours))
        .collect();
    assert!(
        needs.is_empty(),
        "rust-version {ours} is older than these dependencies need: {needs:?}"
    );
}

#[test]
fn the_docs_claim_the_lexicons_language_count() {
    let (_, languages, _) = elicitgate_core::lexicon::SecretLexicon::builtin_report();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let policy = std::fs::read_to_string(root.join("docs/policy.md")).unwrap();
    assert!(
        readme.contains(&format!("in {languages} languages")),
        "README does not say {languages} languages"
    );
    assert!(
        policy.contains(&format!("session cookie, in {languages} languages")),
        "docs/policy.md's form.secret row does not say {languages} languages"
    );
    assert!(
        policy.contains(&format!("**Languages** ({languages}, ")),
        "docs/policy.md does not say {languages} languages"
    );
}
