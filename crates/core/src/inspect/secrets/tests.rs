use super::*;
use std::sync::Arc;

fn lex() -> Arc<SecretLexicon> {
    SecretLexicon::builtin()
}

fn label(s: &str) -> Option<String> {
    lex().scan(s, Role::Label).map(|m| m.detector.to_string())
}

fn prose(s: &str) -> Option<String> {
    lex().scan(s, Role::Prose).map(|m| m.detector.to_string())
}

/// Every label asks for a secret.
fn labels_ask(texts: &[&str]) {
    for t in texts {
        assert!(label(t).is_some(), "{t}");
    }
}

/// No label asks for a secret.
fn labels_ask_none(texts: &[&str]) {
    for t in texts {
        assert!(label(t).is_none(), "{t}");
    }
}

/// Every text, read as prose, asks for a secret.
fn prose_asks(texts: &[&str]) {
    for t in texts {
        assert!(prose(t).is_some(), "{t}");
    }
}

/// No text, read as prose, asks for a secret.
fn prose_asks_none(texts: &[&str]) {
    for t in texts {
        assert!(prose(t).is_none(), "{t}");
    }
}

#[test]
fn builtin_lexicon_builds() {
    assert!(SecretLexicon::build(&[]).is_ok());
}

#[test]
fn identifier_styles_are_caught() {
    for name in [
        "apiKey",
        "API_KEY",
        "api-key",
        "ＡＰＩキー",
        "clientSecret",
        "x-api-key",
        "password",
        "Password",
        "PASSWORD",
        "newPassword",
        "db_password",
        "dbpassword",
        "passphrase",
        "access_token",
        "refreshToken",
        "BearerToken",
        "private_key",
        "sessionId",
        "otp",
        "totp_code",
        "2fa_code",
        "pin",
        "PIN",
        "cardNumber",
        "card_number",
        "cvv",
        "CVC",
        "iban",
        "ssn",
        "secret",
        "token",
        "credentials",
        "passwd",
        "pwd",
    ] {
        assert!(label(name).is_some(), "{name} should be a secret");
    }
}

#[test]
fn benign_identifiers_pass() {
    for name in [
        "monkey",
        "tokenizer",
        "tokenizer_name",
        "keyboard_layout",
        "passing_grade",
        "keystone",
        "pinned",
        "spinner",
        "compass",
        "bypass_cache",
        "token_count",
        "max_tokens",
        "maxTokens",
        "username",
        "user_name",
        "email",
        "environment",
        "branch",
        "canary",
        "api_key_name",
        "password_policy",
        "passwordMinLength",
        "key",
        "primary_key_column",
        "secretary",
        "passport_photo_url",
        "card_title",
        "code_review",
        "zip_code",
        "country_code",
        "session_date",
        "cookie_banner_text",
    ] {
        assert_eq!(label(name), None, "{name} should not be a secret");
    }
}

#[test]
fn detector_names_carry_category_and_language() {
    assert_eq!(
        label("password").as_deref(),
        Some("secret.term:password@en")
    );
    assert_eq!(
        label("mot de passe").as_deref(),
        Some("secret.term:password@fr")
    );
    assert_eq!(label("密碼").as_deref(), Some("secret.term:password@zh"));
    assert_eq!(label("รหัสผ่าน").as_deref(), Some("secret.term:password@th"));
    assert_eq!(
        label("ＡＰＩキー").as_deref(),
        Some("secret.term:api_key@ja")
    );
    assert_eq!(
        label("API-Schlüssel").as_deref(),
        Some("secret.term:api_key@de")
    );
    assert_eq!(
        label("contraseña").as_deref(),
        Some("secret.term:password@es")
    );
}

#[test]
fn multilingual_terms() {
    labels_ask(&[
        "密码",
        "密碼",
        "密钥",
        "密鑰",
        "令牌",
        "口令",
        "验证码",
        "驗證碼",
        "信用卡号",
        "银行卡号",
        "请输入您的支付密码",
        "รหัสผ่าน",
        "รหัส OTP",
        "เลขบัตรเครดิต",
        "mot de passe",
        "clé API",
        "Clé d'API",
        "jeton d'accès",
        "numéro de carte",
        "code PIN",
        "cryptogramme",
        "IBAN",
        "Passwort",
        "Kennwort",
        "API-Schlüssel",
        "Zugangsdaten",
        "Kreditkartennummer",
        "contraseña",
        "clave API",
        "token de acceso",
        "número de tarjeta",
        "パスワード",
        "APIキー",
        "暗証番号",
        "クレジットカード番号",
        "アクセストークン",
        "비밀번호",
        "пароль",
    ]);
}

#[test]
fn suppressors_and_meta_words() {
    for t in [
        "密码学",
        "密码策略",
        "令牌桶算法",
        "パスワードポリシー",
        "トークン数",
        "นโยบายรหัสผ่าน",
        "Choose a password policy level",
        "Maximum number of tokens",
        "Token count limit",
        "politique de mot de passe",
        "longueur du mot de passe",
        "Passwort-Richtlinie",
        "Passwortrichtlinie",
        "política de contraseñas",
        "length of the password",
    ] {
        assert_eq!(prose(t), None, "{t}");
    }
    assert!(prose("Enter the password for the policy").is_some());
    assert_eq!(prose("Enter a name for the new API key"), None);
    assert_eq!(prose("Number of API keys to create"), None);
    assert_eq!(prose("Name your personal access token"), None);
    assert!(prose("Enter your new password").is_some());
    assert!(prose("Label the API key you will paste").is_some());
    assert!(prose("Enter the code from your authenticator app").is_some());
}

#[test]
fn weak_terms_need_a_cue_in_prose() {
    assert!(label("Token").is_some());
    assert_eq!(prose("Your answers will be kept secret"), None);
    assert_eq!(prose("Design token used by the theme"), None);
    assert!(prose("Please enter your token").is_some());
    assert!(prose("Paste the secret here").is_some());
    assert_eq!(prose("Enter the amount charged to the credit card"), None);
    assert!(prose("Enter your credit card").is_some());
    assert!(label("Credit card").is_some());
    assert!(prose("トークンを入力してください").is_some());
    assert_eq!(prose("トークンの使用量を確認します"), None);
    assert!(prose("请输入信用卡").is_some());
}

#[test]
fn homoglyph_words_are_caught() {
    // Cyrillic 'р' and 'а' inside a Latin word.
    assert_eq!(
        label("раssword").as_deref(),
        Some("secret.confusable:password")
    );
    assert!(prose("Enter your раsswоrd").is_some());
}

#[test]
fn extra_terms_extend_the_lexicon() {
    let l = SecretLexicon::build(&["numéro fidélité".to_string(), "社保号".to_string()])
        .expect("build");
    assert_eq!(
        l.scan("Numero fidelite", Role::Label).map(|m| m.detector),
        Some("secret.term:custom")
    );
    assert_eq!(
        l.scan("请输入社保号", Role::Prose).map(|m| m.detector),
        Some("secret.term:custom")
    );
    assert!(SecretLexicon::build(&["--".to_string()]).is_err());
}

fn form(props: Value, message: &str) -> Vec<(String, String)> {
    let schema = serde_json::json!({"type":"object","properties":props});
    let mut hits = Hits::new();
    check_form(&schema, Some(message), &lex(), &HashSet::new(), &mut hits);
    let v = hits.resolve(
        |_| crate::inspect::RuleAction::Deny,
        crate::inspect::Enforcement::Enforce,
        None,
    );
    v.findings
        .into_iter()
        .map(|f| (f.location, f.detector))
        .collect()
}

#[test]
fn only_free_input_properties_are_judged() {
    use serde_json::json;
    assert!(form(
        json!({"remember_password":{"type":"boolean"}}),
        "Remember your password?"
    )
    .is_empty());
    assert!(form(
        json!({"auth_method":{"type":"string","enum":["password","sso"]}}),
        "Choose"
    )
    .is_empty());
    let f = form(json!({"pin":{"type":"integer"}}), "Confirm");
    assert_eq!(
        f,
        vec![("properties.pin".into(), "secret.term:pin@en".into())]
    );
    let f = form(
        json!({"value":{"type":"string"}}),
        "Please enter your password",
    );
    assert_eq!(
        f,
        vec![("message".into(), "secret.term:password@en".into())]
    );
}

#[test]
fn format_password_and_write_only_are_secrets() {
    use serde_json::json;
    let f = form(json!({"v":{"type":"string","format":"password"}}), "x");
    assert_eq!(
        f,
        vec![(
            "properties.v.format".into(),
            "secret.format:password".into()
        )]
    );
    let f = form(json!({"v":{"type":"string","writeOnly":true}}), "x");
    assert_eq!(
        f,
        vec![("properties.v.writeOnly".into(), "secret.write_only".into())]
    );
}

#[test]
fn exempt_names_skip_checks() {
    use serde_json::json;
    let schema = json!({"type":"object","properties":{"password_hint":{"type":"string","title":"Password hint"}}});
    let mut allow = HashSet::new();
    allow.insert(crate::inspect::fold_name("Password_Hint"));
    let mut hits = Hits::new();
    check_form(
        &schema,
        Some("Enter a password hint"),
        &lex(),
        &allow,
        &mut hits,
    );
    let v = hits.resolve(
        |_| crate::inspect::RuleAction::Deny,
        crate::inspect::Enforcement::Enforce,
        None,
    );
    assert!(v.findings.is_empty());
}

/// Every `form.secret` finding says which step of the procedure decided and which term it
/// read.
#[test]
fn findings_explain_the_step_and_the_term() {
    use crate::inspect::rule::{Enforcement, RuleAction};
    let explain = |schema: serde_json::Value, message: &str| {
        let mut hits = Hits::new();
        check_form(&schema, Some(message), &lex(), &HashSet::new(), &mut hits);
        hits.resolve(|_| RuleAction::Deny, Enforcement::Enforce, None)
            .findings
            .into_iter()
            .map(|f| (f.location, f.because.unwrap_or("-"), f.term))
            .collect::<Vec<_>>()
    };
    let got = explain(
        serde_json::json!({"type": "object", "properties": {
            "mdp": {"type": "string", "title": "Mot de passe"}}}),
        "Connexion",
    );
    assert_eq!(
        got,
        [
            (
                "properties.mdp".to_string(),
                step::LABEL,
                Some("mdp".to_string())
            ),
            (
                "properties.mdp.title".to_string(),
                step::LABEL,
                Some("mot de passe".to_string())
            )
        ]
    );
    let got = explain(
        serde_json::json!({"type": "object", "properties": {
            "value": {"type": "string", "description": "Paste the API key from your dashboard"}}}),
        "Setup",
    );
    assert_eq!(got[0].1, step::DESCRIPTION);
    let got = explain(
        serde_json::json!({"type": "object", "properties": {"value": {"type": "string"}}}),
        "Enter your password to continue",
    );
    assert_eq!(
        got,
        [(
            "message".to_string(),
            step::FORM_TEXT,
            Some("password".to_string())
        )]
    );
    let got = explain(
        serde_json::json!({"type": "object", "properties": {
            "x": {"type": "string", "format": "password"}}}),
        "Setup",
    );
    assert_eq!(
        got,
        [(
            "properties.x.format".to_string(),
            step::FORMAT_PASSWORD,
            None
        )]
    );
}

#[test]
fn a_message_fills_blank_inputs_only() {
    use serde_json::json;
    let msg = "Your online banking PIN:";
    // A blank input (generic or no label) is what the message names.
    for blank in [
        json!({"value": {"type": "string"}}),
        json!({"f1": {"type": "string", "title": "Your answer"}}),
        json!({"code": {"type": "string", "title": "Code from the e-mail"}}),
    ] {
        assert!(!form(blank.clone(), msg).is_empty(), "{blank}");
    }
    // An input labelled with what it holds, or shaped as an address, is not filled by a
    // message that names a secret: the form says what it takes.
    let link = "We will e-mail you a secure link to enter your online banking PIN";
    for own in [
        json!({"feedback": {"type": "string"}}),
        json!({"v": {"type": "string", "title": "Reason for the reset"}}),
        json!({"contact": {"type": "string", "format": "email"}}),
        json!({"order_number": {"type": "string"}, "email": {"type": "string", "format": "email"}}),
    ] {
        assert!(form(own.clone(), msg).is_empty(), "{own}");
        assert!(form(own.clone(), link).is_empty(), "{own}");
    }
    // With a blank input beside them, a message over several inputs fills it where it asks.
    let mixed = json!({"feedback": {"type": "string"}, "value": {"type": "string"}});
    assert!(!form(mixed.clone(), "Enter your online banking PIN below").is_empty());
    assert!(form(mixed, "Your online banking PIN was changed").is_empty());
    // A shaped input with its own label is not the shape the message names either.
    let thanks = "Thanks for setting up your new card PIN. How did it go?";
    let rating = json!({"rating": {"type": "integer"}, "comment": {"type": "string"}});
    assert!(form(rating, thanks).is_empty());
    let blank_number = json!({"value": {"type": "integer"}, "comment": {"type": "string"}});
    assert!(!form(blank_number, "Type your card PIN, then a comment").is_empty());
}

#[test]
fn warnings_and_choices_ask_nothing() {
    use serde_json::json;
    let blank = json!({"value": {"type": "string"}});
    for warning in [
        "Never share your seed phrase with anyone. What did the caller ask for?",
        "Do not include your password in the report.",
        "We will never ask for your PIN. Describe the message you received.",
    ] {
        assert!(form(blank.clone(), warning).is_empty(), "{warning}");
    }
    // A request in the next sentence is not negated.
    assert!(!form(
        blank.clone(),
        "Don't worry. Enter your password to continue."
    )
    .is_empty());
    // A boolean's or a choice's text: choosing, requiring or writing down is not typing.
    for title in [
        "Require an admin PIN to exit kiosk mode",
        "Choose how to receive your verification code",
        "Write the recovery phrase on paper",
        "I will never type my recovery phrase into a website",
    ] {
        let f = json!({"b": {"type": "boolean", "title": title}});
        assert!(form(f, "Settings").is_empty(), "{title}");
    }
    // Such a text asks where the form has an input that can take what it names; a form
    // with none asks nothing, as a message over checkboxes does not.
    let paste = json!({
        "b": {"type": "boolean", "title": "Paste your API key in the notes"},
        "notes": {"type": "string", "title": "Notes"}
    });
    assert!(!form(paste, "Settings").is_empty());
    for (b, other) in [
        ("Paste your API key in the chat", json!({"type": "boolean"})),
        ("启动 App 时需要输入 PIN 码", json!({"type": "boolean"})),
        (
            "Enter your PIN at every login",
            json!({"type": "string", "format": "email"}),
        ),
    ] {
        let f = json!({"b": {"type": "boolean", "title": b}, "c": other});
        assert!(form(f, "Settings").is_empty(), "{b}");
    }
}

#[test]
fn labels_name_content_unless_a_blank_word_waits_for_something_else() {
    let lex = lex();
    for own in [
        "feedback",
        "Reason for the reset",
        "reminder_email",
        "Ваш отзыв",
    ] {
        if own.is_ascii() {
            assert!(lex.names_content(own), "{own}");
        }
    }
    for blank in [
        "value",
        "Code from the email",
        "Number on your card",
        "",
        "field1",
    ] {
        assert!(!lex.names_content(blank), "{blank}");
    }
}

#[test]
fn a_label_showing_a_full_date_format_holds_a_date() {
    for t in [
        "Password last changed (YYYY-MM-DD)",
        "Şifrenizi en son ne zaman değiştirdiniz? (GG.AA.YYYY)",
        "Data di creazione della chiave (AAAA-MM-GG)",
        "วันหมดอายุของ client secret (ปปปป-ดด-วว)",
        "dd/mm/yyyy",
    ] {
        assert!(super::shows_full_date(t), "{t}");
    }
    for t in [
        "Card expiry (MM/YY)",
        "Valid thru MM/YYYY",
        "v1.2.3",
        "e.g. 2024-01-31",
        "a-b-c",
    ] {
        assert!(!super::shows_full_date(t), "{t}");
    }
}

#[test]
fn a_question_title_holds_its_answer() {
    use serde_json::json;
    // A text input titled with a question holds the answer, which the message asks for.
    let msg = "Para recuperar el acceso, responde a tu pregunta de seguridad.";
    let pet = json!({"respuesta": {"type": "string", "title": "¿Cuál era el nombre de tu primera mascota?"}});
    assert!(!form(pet, msg).is_empty());
    // A number titled with a question holds the count it names.
    let count = json!({"n": {"type": "integer", "title": "How many extra cards do you need?", "minimum": 1}});
    assert!(form(count, "Each extra card gets its own PIN, sent by post.").is_empty());
}

#[test]
fn a_circumstance_question_in_prose_is_about_the_secret() {
    use serde_json::json;
    let props = json!({
        "source": {"type": "string", "title": "Source", "enum": ["email", "phone"]},
        "details": {"type": "string", "title": "Details"}
    });
    let about = "Where did you hear that we'd need your Social Security number? We never ask.";
    assert!(form(props.clone(), about).is_empty());
    let ask = "Please enter your Social Security number in the details field.";
    assert!(!form(props, ask).is_empty());
}

#[test]
fn a_title_restating_the_name_in_a_benign_sense_overrules_it() {
    use serde_json::json;
    let degrees = json!({"credentials": {"type": "string", "title": "Professional credentials"}});
    assert!(form(degrees, "Complete your clinician profile.").is_empty());
    let login = json!({"credentials": {"type": "string", "title": "Credentials"}});
    assert!(!form(login, "Sign in to the legacy portal.").is_empty());
}

#[test]
fn a_conjunction_joins_two_things_not_a_property() {
    // A role word before a conjunction names the other thing of a pair.
    labels_ask(&[
        "Name and password",
        "Nombre y contraseña",
        "Имя и пароль",
        "Nom et mot de passe",
    ]);
    labels_ask_none(&["Name of the password", "Reason for revoking the token"]);
}

#[test]
fn where_a_secret_is_kept_is_no_secret() {
    labels_ask_none(&[
        "Ruta en Vault de la contraseña de la base de datos",
        "Chemin du mot de passe dans le coffre-fort Vault",
        "Vault-Pfad des Datenbankpassworts",
        "Path to the DB password in Vault",
    ]);
    assert!(label("Database password").is_some());
}

#[test]
fn an_example_under_a_label_that_says_what_the_field_holds_is_its_topic() {
    use serde_json::json;
    for (title, description) in [
        ("Subject", "e.g. 'Reset my VPN password'"),
        ("工单标题", "例如：忘记登录密码，找回时收不到邮件"),
        ("Error code (if any)", "e.g. 401 invalid_api_key"),
        ("Contributing factors", "e.g. API key stored in plaintext"),
    ] {
        let f = json!({"f": {"type": "string", "title": title, "description": description}});
        assert!(
            form(f, "Open a ticket").is_empty(),
            "{title}: {description}"
        );
    }
    // What comes before the example may ask; under a blank label the example is the ask.
    for (title, description) in [
        (
            "Connection URI",
            "Including the password, e.g. mysql://user:pass@host/db",
        ),
        ("Value", "e.g. your GitHub token"),
        (
            "Source account",
            "Email address and password of the mailbox, e.g. me@old.com:x",
        ),
    ] {
        let f = json!({"f": {"type": "string", "title": title, "description": description}});
        assert!(!form(f, "Set up").is_empty(), "{title}: {description}");
    }
}

#[test]
fn prefilled_content_is_its_topic_and_a_blank_to_complete_asks() {
    use serde_json::json;
    for default in [
        "Forgot my password – need a reset link",
        "No puedo restablecer mi contraseña",
    ] {
        let f = json!({"subject": {"type": "string", "title": "Subject", "default": default}});
        assert!(form(f, "Contact support").is_empty(), "{default}");
    }
    for default in [
        "My PIN is: ",
        "Hi, my account number is ____ and my routing number is ____",
    ] {
        let f = json!({"note": {"type": "string", "title": "Verification", "default": default}});
        assert!(!form(f, "Verify your identity").is_empty(), "{default}");
    }
}

#[test]
fn a_number_labelled_with_a_unit_holds_a_quantity() {
    use serde_json::json;
    for title in [
        "Days until a password must be changed",
        "Wymuszaj zmianę hasła co (dni)",
        "Number of users without MFA",
    ] {
        let f = json!({"n": {"type": "integer", "title": title, "minimum": 0}});
        assert!(form(f, "Security settings").is_empty(), "{title}");
    }
    // A one-time code is no unit ("Nambari ya mara moja (OTP)"), and a PIN stays a PIN.
    let otp =
        json!({"n": {"type": "integer", "title": "Nambari ya mara moja (OTP) uliyopokea kwa SMS"}});
    assert!(!form(otp, "Kamilisha kuingia").is_empty());
    let pin = json!({"n": {"type": "integer", "title": "Telephone banking PIN", "maximum": 99999}});
    assert!(!form(pin, "Identity check").is_empty());
}

#[test]
fn questions_relatives_and_postpositions_make_a_label_about_the_secret() {
    labels_ask_none(&[
        "Who will hold the emergency admin credentials?",
        "À quand remonte le dernier changement de votre mot de passe ?",
        "Πού φυλάσσεται το μυστικό;",
        "CI pipeline that will use this token",
        "Host where the certificate's private key is installed",
        "टोकन का स्वामी",
        "Kartınızın son 4 hanesi",
    ]);
    labels_ask(&[
        "What is your online banking password?",
        "Kata sandi saat ini",
        "A password you used on this account before",
        "Citizen service number (BSN)",
    ]);
    assert!(prose("What's this token for?").is_none());
}

#[test]
fn cues_reach_past_articles_and_numbers_and_negations_close_verb_final_sentences() {
    prose_asks(&[
        "Type your 4-digit banking PIN to authorise this payment",
        "Bitte geben Sie das soeben erzeugte Token ein",
        "আপনি এইমাত্র যে টোকেন তৈরি করেছেন সেটি নিচের ঘরে পেস্ট করুন।",
    ]);
    prose_asks_none(&[
        "দয়া করে এখানে আপনার পাসওয়ার্ড লিখবেন না",
        "पूरा कार्ड नंबर कभी न डालें।",
        "Jangan sekali-kali masukkan nombor kad penuh dalam borang ini.",
    ]);
}

#[test]
fn a_hash_after_a_word_reads_number() {
    labels_ask(&["Card #", "CC#", "Acct #:"]);
    labels_ask_none(&["Order # (from your receipt)", "#hashtag", "C# developer"]);
}

#[test]
fn a_head_noun_joined_by_a_preposition_or_a_compact_property_phrase_is_about() {
    labels_ask_none(&[
        "Secret Manager reference for the client secret",
        "Comment for your PIN",
        "令牌的用途",
    ]);
    labels_ask(&[
        "Team API token",
        "Password for the account",
        "Date de fin de validité de votre carte",
    ]);
}

#[test]
fn yes_no_question_labels_and_relative_clauses_in_prose_are_about() {
    assert!(label("Do you use the same password anywhere else? Which services?").is_none());
    assert!(label("Could you enter your PIN?").is_some());
    assert!(prose("Hostname of the server whose admin password will be rotated").is_none());
    assert!(prose("Did you rotate your API key? Paste the new one.").is_some());
}

#[test]
fn whose_secret_is_asked_is_no_property_of_it() {
    labels_ask(&[
        "Owner's SSN",
        "Owner PIN",
        "Co-owner IBAN",
        "Owner's bank account number",
    ]);
    labels_ask_none(&["Owner of the API key", "API key owner"]);
}

#[test]
fn an_exact_term_keeps_its_accents() {
    // "Số thẻ" (card number) folds to English "so the": matched as written, ending a label.
    labels_ask(&["Số thẻ", "Số thẻ (16 chữ số)"]);
    labels_ask_none(&["Số thẻ thành viên", "So the order ships"]);
}

#[test]
fn negative_imperatives_after_the_term_warn() {
    prose_asks_none(&[
        "Sorunu açıklayın. Şifrenizi buraya yazmayın.",
        "مشکل خود را شرح دهید. رمز عبور خود را اینجا وارد نکنید.",
        "Conte mais (não informe sua senha)",
    ]);
    assert!(label("Conte mais (não informe sua senha)").is_none());
    assert!(prose("בחרו משפט סיסמה שתזכרו – לא נוכל לשחזר אותו.").is_some());
}

#[test]
fn a_negative_imperative_closing_a_list_warns() {
    prose_asks_none(&[
        "कृपया यहाँ PIN, OTP या कार्ड नंबर न लिखें",
        "یہاں PIN، OTP یا مکمل کارڈ نمبر نہ لکھیں",
        "এখানে পিন, OTP বা পাসওয়ার্ড লিখবেন না",
    ]);
    assert!(prose("कृपया अपना PIN यहाँ लिखें").is_some());
}

#[test]
fn an_expiry_label_asks_for_a_cards_beside_a_card_or_a_month_year_format() {
    use serde_json::json;
    // The form names a payment card, or the field writes month/year.
    for (title, description, message) in [
        (
            "Date d'expiration",
            "",
            "Complétez les informations de votre carte bancaire.",
        ),
        ("Son kullanma tarihi", "", "Kredi kartınızı güncelleyin"),
        ("Ablaufdatum", "Monat/Jahr", "Zahlungsdaten"),
        ("Geldig t/m", "MM/JJ", "Betaalgegevens"),
        ("有効期限", "月/年", "お支払い"),
        ("Ημερομηνία λήξης", "ΜΜ/ΕΕ", "Πληρωμή"),
    ] {
        let f = json!({"e": {"type": "string", "title": title, "description": description}});
        let found = form(f, message);
        assert!(
            found.iter().any(|(_, d)| d == "secret.context:card_expiry"),
            "{title}: {found:?}"
        );
    }
    let pattern = json!({"exp": {"type": "string", "title": "Tarikh luput",
        "pattern": "^(0[1-9]|1[0-2])/[0-9]{2}$"}});
    assert!(!form(pattern, "Kemas kini").is_empty());
    // Another expiry, a count, or no card and no month/year: no card's.
    for (f, message) in [
        (
            json!({"exp": {"type": "string", "format": "date", "title": "Access expiration date"}}),
            "Add a member to the GitLab group",
        ),
        (
            json!({"exp": {"type": "string", "format": "date", "title": "Passport expiry date"}}),
            "Visa pre-check.",
        ),
        (
            json!({"d": {"type": "integer", "title": "Days before expiry", "maximum": 60}}),
            "Your credit card ending 4242 expires next month. When should we remind you?",
        ),
        (
            json!({"a": {"type": "string", "title": "Ablaufdatum des Deploy-Tokens (JJJJ-MM-TT)"}}),
            "Stammdaten für Deploy-Tokens",
        ),
    ] {
        assert!(form(f.clone(), message).is_empty(), "{f}");
    }
}

#[test]
fn a_default_under_a_label_naming_its_content_is_that_content() {
    use serde_json::json;
    let query = json!({"query": {"type": "string", "title": "Query",
        "default": "service:auth status:error \"invalid password\""}});
    assert!(form(query, "Log search").is_empty());
    let blank = json!({"value": {"type": "string", "default": "my online banking password"}});
    assert!(!form(blank, "Verify").is_empty());
}

#[test]
fn a_number_typed_a_digit_per_box_a_verification_code_and_a_configuration_template_ask() {
    use serde_json::json;
    let digit = json!({"type": "integer", "minimum": 0, "maximum": 9});
    let boxes = json!({"d1": digit, "d2": digit, "d3": digit, "d4": digit});
    assert!(!form(
        boxes.clone(),
        "Enter your 4-digit card PIN, one digit per box."
    )
    .is_empty());
    // Two ratings of one digit are no split number.
    let ratings = json!({"speed": digit, "quality": digit});
    assert!(form(
        ratings,
        "Enter your 4-digit card PIN next time; rate us now."
    )
    .is_empty());
    let code =
        json!({"v": {"type": "string", "title": "Verify it's you", "pattern": "^[0-9]{6}$"}});
    assert!(!form(code, "Before changing your payout details").is_empty());
    let zip = json!({"z": {"type": "string", "title": "Postal code", "pattern": "^[0-9]{6}$"}});
    assert!(form(zip, "Shipping").is_empty());
    let template = json!({"env": {"type": "string", "title": "Environment",
        "default": "OPENAI_API_KEY=sk-...\nLOG_LEVEL=info"}});
    assert!(!form(template, "Fill in the values").is_empty());
    let plain = json!({"env": {"type": "string", "title": "Environment",
        "default": "LOG_LEVEL=info\nPORT=8080"}});
    assert!(form(plain, "Fill in the values").is_empty());
}

#[test]
fn an_answer_to_a_security_question_and_a_month_or_year_of_a_cards_expiry_ask() {
    use serde_json::json;
    let answer = json!({
        "q": {"type": "string", "title": "Security question",
              "enum": ["Mother's maiden name", "First pet's name"]},
        "a": {"type": "string", "title": "Your answer"}
    });
    assert!(!form(answer, "Answer the security question to continue").is_empty());
    let survey = json!({"a": {"type": "string", "title": "Your answer"}});
    assert!(form(survey, "What did you like most about the course?").is_empty());
    let parts = json!({
        "mes": {"type": "string", "title": "Mes", "enum": ["01", "02", "12"]},
        "anio": {"type": "integer", "title": "Año", "minimum": 2025, "maximum": 2040}
    });
    assert!(!form(
        parts.clone(),
        "Introduce la fecha de caducidad de tu tarjeta de crédito"
    )
    .is_empty());
    assert!(form(parts, "¿En qué mes y año empezaste a trabajar aquí?").is_empty());
}

#[test]
fn a_request_for_something_else_names_the_secret_as_its_topic() {
    prose_asks_none(&[
        "Enter a name for your new API key.",
        "Впишите, почему отзываете токен.",
    ]);
    prose_asks(&[
        "Enter your email address and password.",
        "Confirm your email password below.",
    ]);
    use serde_json::json;
    let conn = json!({"v": {"type": "string", "title": "Verbindung",
        "description": "z. B. postgresql://benutzer:passwort@host:5432/db"}});
    assert!(!form(conn, "Datenbank verbinden").is_empty());
    let expiry = json!({"v": {"type": "string", "title": "Value",
        "description": "Key in the new expiry date from your replacement card (MM/YY)."}});
    assert!(!form(expiry, "Your card was declined").is_empty());
}

#[test]
fn a_question_whose_interrogative_has_its_own_noun_asks_for_that() {
    use serde_json::json;
    let fields = json!({
        "where": {"type": "string", "title": "Where is the device kept?"},
        "who": {"type": "string", "title": "Who holds the backup?"}
    });
    assert!(form(
        fields.clone(),
        "Which app generates your 2FA codes? We're documenting recovery."
    )
    .is_empty());
    let code = json!({"v": {"type": "string"}});
    assert!(!form(code, "What PIN did you choose for this card?").is_empty());
    // A field named `date` whose title names what it holds is no part of a card's expiry.
    let delivery =
        json!({"date": {"type": "string", "format": "date", "title": "Preferred delivery day"}});
    assert!(form(
        delivery,
        "Your credit card expires soon. When should we deliver the new one?"
    )
    .is_empty());
}

/// Inputs of one character or one numbered word each take a secret piece by piece: the
/// message names it without a request verb. One such input, or pieces over a message that
/// names no secret, ask nothing.
#[test]
fn a_secret_typed_piece_by_piece() {
    use serde_json::json;
    let chars = json!({
        "c2": {"type": "string", "title": "2nd character"},
        "c5": {"type": "string", "title": "5th character"},
        "c7": {"type": "string", "title": "Character 7"}
    });
    let words = json!({
        "w1": {"type": "string", "title": "Word #1"},
        "w2": {"type": "string", "title": "Word #2"}
    });
    let boxes = json!({
        "a": {"type": "string", "maxLength": 1},
        "b": {"type": "string", "maxLength": 1}
    });
    for (f, m) in [
        (
            &chars,
            "Your bank asks for characters 2, 5 and 7 of your memorable word.",
        ),
        (
            &words,
            "Type the first two words of your recovery phrase, in order.",
        ),
        (&boxes, "ご登録の合言葉の指定された文字をご入力ください。"),
    ] {
        assert!(!form(f.clone(), m).is_empty(), "{m}");
    }
    for (f, m) in [
        (&chars, "Pick three letters for your new monogram."),
        (&words, "Describe your product in two words."),
    ] {
        assert!(form(f.clone(), m).is_empty(), "{m}");
    }
}

/// A free input's default left for the user to complete names what they type: a label and
/// a colon in any script, a begun prefix, a sentence ending in a copula. An identifier with
/// underscores is a value, not a line to fill.
#[test]
fn defaults_left_to_complete() {
    use serde_json::json;
    for d in [
        "暗証番号：",
        "IBAN: DE",
        "My Social Security number is ",
        "Mein aktuelles Passwort ist ",
        "我的登录密码是：",
    ] {
        let f = json!({"reply": {"type": "string", "default": d}});
        assert!(!form(f, "Verification").is_empty(), "{d}");
    }
    for d in ["__Host-sid", "10:30", "Status: OK"] {
        let f = json!({"cookie_name": {"type": "string", "title": "Cookie name", "default": d}});
        assert!(form(f, "Settings").is_empty(), "{d}");
    }
}

/// A field whose pattern opens with a well-known credential, or whose label or description
/// shows one's prefix, asks for it; a prefix no credential has asks nothing.
#[test]
fn credential_formats_by_pattern_or_prefix() {
    use serde_json::json;
    for p in [
        json!({"v": {"type": "string", "title": "Value", "pattern": "^sk-[A-Za-z0-9_-]{32,}$"}}),
        json!({"v": {"type": "string", "title": "User key", "description": "Begins with NRAK-"}}),
        json!({"v": {"type": "string", "title": "Bot", "description": "xoxb-…"}}),
    ] {
        assert!(!form(p.clone(), "Connect").is_empty(), "{p}");
    }
    for p in [
        json!({"v": {"type": "string", "title": "Order", "pattern": "^ORD-[0-9]{6}$"}}),
        json!({"v": {"type": "string", "title": "Region", "description": "Starts with eu- or us-"}}),
        json!({"v": {"type": "string", "title": "Checksum", "pattern": "^[a-f0-9]{64}$"}}),
    ] {
        assert!(form(p.clone(), "Connect").is_empty(), "{p}");
    }
}

#[test]
fn a_pattern_of_card_lengths_asks_for_a_card() {
    use serde_json::json;
    for pattern in ["^[0-9]{13,19}$", "^\\d{12,19}$", "[0-9]{15,16}"] {
        let f = json!({"digits": {"type": "string", "pattern": pattern}});
        let found = form(f, "Add a payment method");
        assert!(
            found.iter().any(|(_, d)| d == "secret.context:card"),
            "{pattern}: {found:?}"
        );
    }
    // A code, a phone number, a fixed-length reference: no card's lengths.
    for pattern in [
        "^[0-9]{6}$",
        "^\\d{16}$",
        "^[0-9]{10,12}$",
        "^\\+[0-9]{7,15}$",
    ] {
        let f = json!({"reference": {"type": "string", "title": "Reference", "pattern": pattern}});
        assert!(form(f, "Track a parcel").is_empty(), "{pattern}");
    }
}

#[test]
fn choices_shown_as_enum_values_and_reports_of_typing_are_read() {
    use serde_json::json;
    let asks = [
        json!({"method": {"type": "string", "enum": [
                "I'll type the 6-digit code from my authenticator app in the Response box",
                "Send me a new code instead"]},
            "response": {"type": "string", "title": "Response"}}),
        json!({"done": {"type": "boolean",
                "title": "I copied the value of my session cookie into the Data field"},
            "data": {"type": "string", "title": "Data"}}),
        json!({"ok": {"type": "boolean",
                "title": "J'ai saisi mon mot de passe dans le champ Réponse"},
            "reponse": {"type": "string", "title": "Réponse"}}),
    ];
    for f in asks {
        assert!(!form(f.clone(), "Continue").is_empty(), "{f}");
    }
    // No place named, or a negated report: nothing asked.
    let none = [
        json!({"done": {"type": "boolean", "title": "I copied my recovery codes to a safe place"},
            "notes": {"type": "string", "title": "Notes"}}),
        json!({"done": {"type": "boolean", "title": "I have never typed my password in any field"},
            "notes": {"type": "string", "title": "Notes"}}),
        json!({"plan": {"type": "string", "enum": ["password_reset", "token_rotation"]},
            "notes": {"type": "string", "title": "Notes"}}),
    ];
    for f in none {
        assert!(form(f.clone(), "Continue").is_empty(), "{f}");
    }
}

#[test]
fn requests_placed_elsewhere_or_negated_here_ask_nothing() {
    prose_asks_none(&[
        "Next, we'll ask for your Social Security Number on a secure page.",
        "You'll enter the actual credentials on Snowflake's own page in the next step.",
        "Just your sign-in name, no password here",
        "DB connection (no password stored here; uses IAM auth)",
        "Supply the recovery codes later on, in the Security tab.",
    ]);
    prose_asks(&[
        "Enter your password below; the next step asks for your address.",
        "No PIN? Enter your password here.",
        "Supply one of your recovery codes (format xxxxx-xxxxx).",
        "Send us the PIN of the card to reactivate it.",
    ]);
}

#[test]
fn a_database_url_label_or_pattern_asks_for_credentials() {
    use serde_json::json;
    for prop in [
        json!({"type": "string", "pattern": "^postgres(ql)?://"}),
        json!({"type": "string", "title": "Line starting with postgres://"}),
        json!({"type": "string", "pattern": "^mongodb\\+srv://.*"}),
    ] {
        let found = form(json!({"line": prop}), "Run the migration");
        assert!(
            found.iter().any(|(_, d)| d == "secret.context:credentials"),
            "{prop}: {found:?}"
        );
    }
    let web = json!({"site": {"type": "string", "title": "Site", "pattern": "^https://"}});
    assert!(form(web, "Add a site").is_empty());
}

#[test]
fn a_choice_naming_the_input_a_secret_goes_in_asks_for_it() {
    use serde_json::json;
    let asks = json!({
        "value": {"type": "string", "title": "Value", "minLength": 44},
        "confirm": {"type": "boolean",
            "title": "I confirm Value holds this peer's WireGuard private key"}});
    assert!(form(asks, "Add VPN peer")
        .iter()
        .any(|(at, _)| at.ends_with("confirm.title")));
    let placed = json!({
        "which": {"type": "string", "oneOf": [
            {"const": "a", "title": "Pasting the rotated client secret into Details"},
            {"const": "b", "title": "Use a certificate"}]},
        "details": {"type": "string", "title": "Details"}});
    assert!(!form(placed, "Okta SCIM connector").is_empty());
    // An input's label named in passing, not as the place to type.
    let passing = json!({
        "vendor": {"type": "string", "title": "Vendor"},
        "held": {"type": "string", "title": "Did the vendor hold API keys of ours?",
            "enum": ["yes", "no"]}});
    assert!(form(passing, "Log a vendor breach").is_empty());
}

#[test]
fn a_phrase_described_under_a_blank_label_names_what_it_holds() {
    use serde_json::json;
    let sim = json!({"value": {"type": "string", "title": "Value",
        "description": "The PIN of the SIM card inserted in the modem."}});
    assert!(!form(sim, "Bring the LTE modem online").is_empty());
    // A labelled field's description, a warning, or a request for something else: no.
    for (title, description) in [
        ("Reason", "The PIN of the SIM card was blocked"),
        ("Value", "Never your PIN, only the modem's name"),
        ("Value", "Name of the SIM card whose PIN changed"),
    ] {
        let f = json!({"value": {"type": "string", "title": title, "description": description}});
        assert!(form(f.clone(), "Modem settings").is_empty(), "{f}");
    }
}

#[test]
fn shapes_defaults_and_security_questions_ask_by_context() {
    use serde_json::json;
    let asks = [
        (
            json!({"first_pet": {"type": "string", "title": "What was your first pet's name?"},
                "email": {"type": "string", "format": "email"}}),
            "Account recovery",
        ),
        (
            json!({"input": {"type": "string", "title": "Input", "pattern": "^\\d{2}/\\d{2}$"}}),
            "Your Visa ending 1188 was renewed. Key in the new expiry date.",
        ),
        (
            json!({"key": {"type": "string", "title": "Setting", "default": "sk-proj-"}}),
            "OpenAI",
        ),
        (
            json!({"line": {"type": "string", "title": "netrc entry",
                "default": "machine api.heroku.com login ops@acme.io password "}}),
            "Edit the line",
        ),
        (
            json!({"value": {"type": "string", "default": "Your Shopee password"}}),
            "Session expired",
        ),
    ];
    for (f, message) in asks {
        assert!(!form(f.clone(), message).is_empty(), "{f}");
    }
    let none = [
        // A pet's name on a vet's form; an MM/YY shape without a card; an open reason.
        (
            json!({"pet": {"type": "string", "title": "What was your first pet's name?"}}),
            "Tell us about your pets",
        ),
        (
            json!({"input": {"type": "string", "title": "Input", "pattern": "^\\d{2}/\\d{2}$"}}),
            "Graduation",
        ),
        (
            json!({"reason": {"type": "string", "title": "Reason",
                "default": "Token no longer needed because "}}),
            "Revoke token",
        ),
    ];
    for (f, message) in none {
        assert!(form(f.clone(), message).is_empty(), "{f}");
    }
}

#[test]
fn a_code_label_under_a_message_saying_how_it_came_is_the_one_time_code() {
    use serde_json::json;
    let f = json!({"code": {"type": "string", "title": "Code", "maxLength": 6},
        "trust": {"type": "boolean", "title": "Trust this device"}});
    assert!(!form(
        f.clone(),
        "We just called you and read out a six-digit code."
    )
    .is_empty());
    assert!(!form(f.clone(), "We texted a code to your phone ending 42.").is_empty());
    // A code of another kind, or a message that says nothing of how it came.
    assert!(form(f.clone(), "Enter the promo code from our newsletter.").is_empty());
    assert!(form(f, "Have a discount?").is_empty());
}

#[test]
fn a_request_by_pronoun_in_the_next_sentence_asks_for_what_the_message_named() {
    use serde_json::json;
    let f = json!({"value_1": {"type": "string", "title": "Value 1"},
        "value_2": {"type": "string", "title": "Value 2"}});
    let asks = "Datadog needs two things: your API key and your application key. Paste them below.";
    assert!(!form(f.clone(), asks).is_empty());
    // A request for something of it: its name.
    assert!(form(
        f,
        "Your SSH key was added. Give it a name to find it later."
    )
    .is_empty());
}

#[test]
fn a_card_expiry_chosen_from_month_and_year_lists_is_asked_beside_a_card() {
    use serde_json::json;
    let months: Vec<String> = (1..=12).map(|m| format!("{m:02}")).collect();
    let f = json!({"mm": {"type": "string", "title": "Expiry month", "enum": months},
        "yy": {"type": "string", "title": "Expiry year", "enum": ["26", "27", "28", "29", "30"]}});
    assert!(!form(
        f.clone(),
        "Complete your booking with your credit card's expiry."
    )
    .is_empty());
    let f2 = json!({"m": {"type": "string", "title": "Month", "enum": months},
        "y": {"type": "integer", "title": "Year", "enum": [2026, 2027, 2028, 2029]}});
    assert!(!form(
        f2.clone(),
        "Confirm the valid-thru date printed on your new card."
    )
    .is_empty());
    // The same lists without a card: a birth date, a report's period.
    assert!(form(f2, "When were you born?").is_empty());
    assert!(form(f, "Which month should the report cover?").is_empty());
}

#[test]
fn a_national_number_named_by_its_capitals_is_asked_for() {
    use serde_json::json;
    for label in ["SIN", "SIN (9 digits)", "NINO", "NIE number", "PAN"] {
        let f = json!({"f": {"type": "string", "title": label}});
        assert!(!form(f, "Payroll details").is_empty(), "{label}");
    }
    // The same letters in lower case are words; a date field cannot hold the number.
    for f in [
        json!({"f": {"type": "string", "title": "Pan speed"}}),
        json!({"f": {"type": "string", "title": "Sin título"}}),
        json!({"f": {"type": "string", "title": "SIN", "format": "date"}}),
    ] {
        assert!(form(f, "Camera settings").is_empty());
    }
}

#[test]
fn a_bare_key_from_a_providers_dashboard_is_an_api_key() {
    use serde_json::json;
    let f = json!({"value": {"type": "string", "title": "Value"}});
    assert!(!form(
        f.clone(),
        "Almost there. Paste the key from your SendGrid dashboard into the box below."
    )
    .is_empty());
    // A key of something else, with no dashboard or console to take it from.
    assert!(form(f.clone(), "Which key should the table be sorted by?").is_empty());
    assert!(form(f, "Transpose the song: enter the new key.").is_empty());
}

#[test]
fn a_card_field_of_sixteen_digits_and_a_blank_of_three_beside_a_card_ask_for_them() {
    use serde_json::json;
    let card = json!({"kartu": {"type": "string", "title": "Kartu", "pattern": "^[0-9]{16}$"},
        "nama": {"type": "string", "title": "Nama pemilik"}});
    assert!(!form(card, "Tambahkan kad untuk langganan").is_empty());
    let cvv = json!({"value": {"type": "string", "title": "Value", "pattern": "^[0-9]{3}$"},
        "save": {"type": "boolean", "title": "Save this credit card"}});
    assert!(!form(cvv, "Complete the payment").is_empty());
    // Sixteen digits under another label (a parcel's tracking number), four beside a saved
    // card (its last digits).
    let parcel = json!({"tracking": {"type": "string", "title": "Tracking number", "pattern": "^[0-9]{16}$"}});
    assert!(form(parcel, "Where is the parcel you ordered with your card?").is_empty());
    let last4 = json!({"value": {"type": "string", "pattern": "^\\d{4}$"}});
    assert!(form(last4, "Which credit card? Type its last 4 digits.").is_empty());
}

#[test]
fn a_question_for_the_term_itself_asks_for_it() {
    prose_asks(&[
        "¿Cuál es su PIN? Lo necesitamos para activar los pagos.",
        "Qual è il PIN di questa carta?",
        "Quel est votre code PIN ?",
    ]);
    // Or an interrogative closing it, in the languages that put it last.
    prose_asks(&[
        "OAuth uygulamanızın client secret değeri nedir?",
        "বিকাশ মার্চেন্ট প্যানেলে আপনার app_secret কী?",
    ]);
    // A question of something else the sentence names, or no question at all.
    prose_asks_none(&[
        "¿Cuál es la longitud mínima del PIN?",
        "Qual è il problema con il PIN",
    ]);
}

#[test]
fn requests_of_several_words_and_passive_requests_ask_over_several_inputs() {
    use serde_json::json;
    let f = json!({"value": {"type": "string", "title": "Value"},
        "org": {"type": "string", "title": "Org", "enum": ["production", "sandbox"]},
        "remember": {"type": "boolean", "title": "Remember this device"}});
    for asks in [
        "Key in the consumer secret from your Salesforce connected app.",
        "Could you let us know the SMTP username and password for mail.example.com?",
        "Your Windows sign-in password has to be re-entered first. Pop it in below.",
        "The current password for your Jira Cloud account is needed before we can continue.",
        "The OAuth client secret from Google Cloud Console is required to complete the connector.",
    ] {
        assert!(!form(f.clone(), asks).is_empty(), "{asks}");
    }
    for passes in [
        "Offboard a user. No passwords are needed; access is removed automatically.",
        "Your token 'ci-deploy' was not used for 90 days. Why is it still needed?",
        "Key in the name of the secret you want to map.",
    ] {
        assert!(form(f.clone(), passes).is_empty(), "{passes}");
    }
}

#[test]
fn a_blank_shaped_as_a_code_takes_the_code_the_message_names() {
    use serde_json::json;
    let f = json!({"valeur": {"type": "string", "title": "Valeur", "minLength": 6, "maxLength": 6},
        "confiance": {"type": "boolean", "title": "Faire confiance à cet appareil"}});
    assert!(!form(
        f.clone(),
        "Un code vient d'être envoyé à l'adresse c•••@orange.fr. Merci de le recopier ci-dessous."
    )
    .is_empty());
    assert!(!form(f.clone(), "验证码已发送至 138****5678，请将它填入下方。").is_empty());
    // A code of another kind, a message naming none, or a blank of another shape.
    assert!(form(f.clone(), "Saisissez le code promo de votre magasin.").is_empty());
    assert!(form(f, "Indiquez votre code postal.").is_empty());
    let wide = json!({"v": {"type": "string", "title": "Value", "maxLength": 200},
        "trust": {"type": "boolean", "title": "Trust this device"}});
    assert!(form(wide, "We sent you a code. How did you hear about us?").is_empty());
}

#[test]
fn a_blank_for_a_value_takes_the_secret_variable_the_message_names() {
    use serde_json::json;
    let f = json!({"variable_value": {"type": "string", "title": "Variable value", "minLength": 8},
        "masked": {"type": "boolean", "title": "Mask variable"}});
    assert!(!form(
        f.clone(),
        "Add masked CI/CD variable AWS_SECRET_ACCESS_KEY to project platform/terraform."
    )
    .is_empty());
    // A variable of something else, or a field that takes the variable's name.
    assert!(form(
        f,
        "Add CI/CD variable DEPLOY_REGION to project platform/terraform."
    )
    .is_empty());
    let name = json!({"value": {"type": "string", "pattern": "^[A-Z_][A-Z0-9_]*$"}});
    assert!(form(
        name,
        "Name the environment variable that will hold the API key (for example OPENAI_API_KEY)."
    )
    .is_empty());
}

#[test]
fn a_pattern_of_fixed_words_holds_no_secret() {
    use serde_json::json;
    let yes_no = json!({"yn": {"type": "string", "pattern": "^(yes|no)$"}});
    assert!(form(
        yes_no,
        "We detected a sign-in with your password from a new device. Was this you? Type yes or no."
    )
    .is_empty());
    let delete = json!({"confirm": {"type": "string", "pattern": "^DELETE$"}});
    assert!(form(
        delete,
        "Type DELETE to confirm removing the SSH key 'ci-runner'."
    )
    .is_empty());
    // A pattern of a shape, not of words, still takes what the message asks for.
    let code = json!({"v": {"type": "string", "pattern": "^[0-9]{6}$"}});
    assert!(!form(code, "Type the verification code we texted you.").is_empty());
}

#[test]
fn a_security_question_closing_the_message_is_asked_over_a_blank() {
    use serde_json::json;
    let f = json!({"reply": {"type": "string", "title": "Your reply"}});
    assert!(!form(f.clone(), "Account recovery: in what city were you born?").is_empty());
    // The question removed, and another asked.
    assert!(form(
        f,
        "The security question about your first pet has been removed from your account. Which email should we send recovery links to?"
    )
    .is_empty());
}

#[test]
fn a_generic_document_number_beside_an_identity_document_is_its_number() {
    use serde_json::json;
    let f = json!({"id_type": {"type": "string", "title": "ID type", "enum": ["drivers_license", "state_id"]},
        "id_number": {"type": "string", "title": "License / ID number"}});
    assert!(!form(f, "Verify your identity to unlock higher transfer limits.").is_empty());
    // The same label on a form naming no identity document: an invoice's.
    let invoice = json!({"doc": {"type": "string", "title": "Document number"},
        "amount": {"type": "number", "title": "Amount"}});
    assert!(form(invoice, "Which invoice should we credit?").is_empty());
}

#[test]
fn a_blank_title_leaves_an_input_blank_whatever_its_name() {
    use serde_json::json;
    let f = json!({"id": {"type": "string", "title": "Your reply"}});
    assert!(!form(f, "Identity check: enter your national ID card number.").is_empty());
    // A name saying what the input holds still counts under a question for a title.
    let q = json!({"feedback": {"type": "string", "title": "What did you think of the new sign-in page?"}});
    assert!(form(q, "Your new password has been saved. One quick question:").is_empty());
}

#[test]
fn a_question_the_term_opens_asks_for_it_however_long() {
    use serde_json::json;
    let f = json!({"name": {"type": "string", "title": "Họ tên"}, "a": {"type": "string", "title": "Trả lời"}});
    assert!(!form(
        f.clone(),
        "Mã OTP mà ngân hàng vừa gửi đến số điện thoại của bạn là gì?"
    )
    .is_empty());
    let fa = json!({"name": {"type": "string", "title": "نام"}, "a": {"type": "string", "title": "پاسخ"}});
    assert!(!form(fa, "رمز عبور حساب کاربری شما در سامانه چیست؟").is_empty());
    // A term later in the question is no subject of it: "the name of the password".
    assert!(form(f, "Tên gợi nhớ cho mật khẩu mới mà bạn vừa tạo là gì?").is_empty());
}

#[test]
fn an_owners_possessive_counts_as_one_word_before_the_term() {
    use serde_json::json;
    let f = json!({"name": {"type": "string", "title": "Name"}, "value": {"type": "string", "title": "Value"}});
    for m in [
        "What is the Wi-Fi network's password?",
        "What's your home router's admin password?",
        "Type the guest Wi-Fi network's password below",
        "Was ist Ihre aktuelle PIN?",
    ] {
        assert!(!form(f.clone(), m).is_empty(), "{m}");
    }
    for m in [
        "What is the strongest password manager?",
        "What is the purpose of this API key?",
        "Type the network's name",
    ] {
        assert!(form(f.clone(), m).is_empty(), "{m}");
    }
}

#[test]
fn escapes_left_in_a_string_are_read_as_their_characters() {
    labels_ask(&["\\u0070assword", "Account \\u0070assword", "\\u{70}in"]);
    labels_ask_none(&["\\u00zz value", "C:\\users\\me"]);
}

#[test]
fn a_label_opened_by_an_interrogative_of_circumstance_is_about_the_secret() {
    labels_ask_none(&[
        "Где токен оказался в открытом доступе",
        "When the password was last changed",
    ]);
    // A label that also asks to type still asks.
    labels_ask(&["When prompted, enter the PIN"]);
}

#[test]
fn labels_written_without_spaces_name_their_content() {
    use serde_json::json;
    // An order number of card lengths is an order number.
    let f = json!({"order": {"type": "string", "title": "หมายเลขคำสั่งซื้อ", "pattern": "^[0-9]{12,16}$"},
        "zh": {"type": "string", "title": "订单号", "pattern": "^\\d{16}$"}});
    assert!(form(f, "แจ้งปัญหาพัสดุ").is_empty());
    // A postal code is no blank for a code the message names in a warning.
    let p = json!({"postcode": {"type": "string", "title": "รหัสไปรษณีย์", "pattern": "^[0-9]{5}$"},
        "address": {"type": "string", "title": "ที่อยู่จัดส่ง"}});
    assert!(form(p, "ห้ามแจ้งรหัส OTP แก่ผู้อื่น กรุณายืนยันที่อยู่จัดส่ง").is_empty());
    // Generic words stay blank: the message fills them.
    let d = json!({"details": {"type": "string", "title": "详细信息", "description": "卡面上印的有效期，格式为 MM/YY", "pattern": "^(0[1-9]|1[0-2])/[0-9]{2}$"},
        "auto": {"type": "boolean", "title": "开启自动续费"}});
    assert!(!form(d, "更新您保存的信用卡信息。").is_empty());
}

#[test]
fn hangul_request_windows_count_syllables_not_jamo() {
    use serde_json::json;
    let f = json!({"confirm_text": {"type": "string", "title": "확인 입력"},
        "name": {"type": "string", "title": "이름"}});
    assert!(!form(
        f.clone(),
        "계정 탈퇴를 진행하려면 본인 확인이 필요합니다. 현재 비밀번호를 아래에 입력해 주세요."
    )
    .is_empty());
    assert!(form(
        f,
        "시크릿 저장소의 경로만 입력하고, 접속 정보 자체는 절대 붙여 넣지 마세요."
    )
    .is_empty());
}

#[test]
fn a_secrets_own_expiry_is_no_cards() {
    use serde_json::json;
    let f = json!({"name": {"type": "string", "title": "Name"}, "value": {"type": "string", "title": "Value"}});
    assert!(form(f.clone(), "What is the token's expiry date?").is_empty());
    assert!(!form(f, "Enter your card's expiry date").is_empty());
}

#[test]
fn the_core_words_of_languages_beyond_the_deep_lists_are_read() {
    labels_ask(&[
        "Passwuert",
        "Wachtwurd",
        "Loyniorð",
        "Ger-tremen",
        "Senhal",
        "Pasvorto",
        "Modpas",
        "Сырсөз",
        "Серсүз",
        "Açar söz",
        "پټنوم",
        "وشەی نهێنی",
        "Рамзи тасдиқ",
    ]);
    labels_ask_none(&[
        "Benotzernumm",
        "Brûkersnamme",
        "Uzantnomo",
        "Non itilizatè",
        "Nom d'utilizaire",
        "کارن نوم",
    ]);
}

#[test]
fn passive_and_modal_requests_of_romance_languages_ask() {
    use serde_json::json;
    let f = json!({"value": {"type": "string", "title": "Valor", "minLength": 8},
        "keep": {"type": "boolean", "title": "Manter conectado", "default": false}});
    for m in [
        "A senha da conta gov.br deve ser informada no campo abaixo para continuar.",
        "La password SPID deve essere inserita nel campo sottostante.",
        "Para autorizar la orden debe indicarse la clave de firma en el campo inferior.",
        "Sesiunea a expirat; parola contului trebuie introdusă din nou în câmpul de mai jos.",
        "Le mot de passe doit être saisi ci-dessous.",
    ] {
        assert!(!form(f.clone(), m).is_empty(), "{m}");
    }
    // The same verbs reporting what was done ask nothing of a form about something else.
    let r = json!({"rating": {"type": "integer", "title": "Nota", "minimum": 1, "maximum": 5},
        "comment": {"type": "string", "title": "Comentário"}});
    assert!(form(r, "Sua nova senha foi cadastrada. Como foi a experiência?").is_empty());
}

#[test]
fn secrets_asked_by_where_they_are_used_or_shown() {
    prose_asks(&[
        "The four numbers you use at the ATM",
        "The 4 digits you enter on the keypad to disarm the alarm",
        "Whatever you type after the username on the sign-in page",
        "What you would type at the sudo prompt",
        "The five characters the Steam mobile app is showing right now",
        "Any unused code from the list of 10 you printed when you turned on two-step sign-in",
        "The 16 characters printed directly under the QR code on the router sticker",
    ]);
    prose_asks_none(&[
        "Where is the QR code on your router?",
        "Which authenticator app do you use?",
        "The name of the ATM network you use",
    ]);
}
