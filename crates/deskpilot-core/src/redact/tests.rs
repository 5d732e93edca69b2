//! Unit tests of the redaction rules.

mod unit {
    use crate::redact::text::*;
    use crate::redact::*;
    use crate::role::Role;

    #[test]
    fn a_nameless_field_after_a_password_label_is_a_password_field() {
        let field = |value: &str| {
            let mut f = Node::new(format!("f:{value}"), Role::Textbox, "");
            f.value = Some(value.into());
            f
        };
        let mut root = Node::new("w", Role::Window, "Anmelden");
        let mut row = Node::new("row", Role::Group, "");
        row.children = vec![
            Node::new("l1", Role::Label, "Benutzer"),
            field("anna"),
            Node::new("l2", Role::Label, "PIN:"),
            field("4711"),
            Node::new("l3", Role::Text, "Kennwort"),
            field("geheim"),
            // A label after its field pairs nothing; a named field keeps its name.
            field("after"),
            Node::new("l4", Role::Label, "Password hint"),
            field("my dog"),
        ];
        root.children = vec![row];
        scrub(&mut root);
        let shown: Vec<(bool, Option<&str>)> = root.children[0]
            .children
            .iter()
            .filter(|n| n.role == Role::Textbox)
            .map(|n| (n.has(State::Password), n.value.as_deref()))
            .collect();
        assert_eq!(shown[0], (false, Some("anna")));
        assert!(shown[1].0 && shown[1].1 != Some("4711"), "{shown:?}");
        assert!(shown[2].0 && shown[2].1 != Some("geheim"), "{shown:?}");
        assert_eq!(shown[3], (false, Some("after")));
        assert_eq!(shown[4], (false, Some("my dog")));

        // A grid lists its children in any order: each field takes the label to its
        // left on its row, not the one listed before it.
        let at = |mut n: Node, x: i32, y: i32, w: i32| {
            n.bounds = Some(crate::Bounds::new(x, y, w, 30));
            n
        };
        let mut grid = Node::new("g", Role::Group, "");
        grid.children = vec![
            at(Node::new("lp", Role::Label, "PIN"), 10, 50, 60),
            at(field("ada"), 100, 10, 200),
            at(Node::new("ln", Role::Label, "Name"), 10, 10, 60),
            at(field("4711"), 100, 50, 200),
            // A label above its field.
            at(Node::new("lk", Role::Label, "Passphrase"), 10, 100, 80),
            at(field("words"), 10, 135, 200),
            // A key or a code is typed by a person: not a password field.
            at(
                Node::new("lc", Role::Label, "Verification code"),
                10,
                200,
                80,
            ),
            at(field("123456"), 100, 200, 200),
            // Extents at the edge of i32 neither panic nor pair.
            at(Node::new("lx", Role::Label, "PIN"), i32::MIN, i32::MIN, 60),
            at(field("far"), i32::MAX - 10, i32::MAX - 40, 5),
        ];
        let mut root = Node::new("w", Role::Window, "Form");
        root.children = vec![grid];
        scrub(&mut root);
        let marked: Vec<bool> = root.children[0]
            .children
            .iter()
            .filter(|n| n.role == Role::Textbox)
            .map(|n| n.has(State::Password))
            .collect();
        assert_eq!(marked, [false, true, true, false, false]);
    }

    #[test]
    fn masks_known_tokens() {
        let t = "key sk-proj-Xq7Lm2Np9Rs4Tv8Wz1Yb6Cd3Ef5Gh0Jk end";
        assert_eq!(mask_secrets(t), "key [masked secret, 40 chars] end");
        assert_eq!(
            mask_secrets("ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
            "[masked secret, 40 chars]"
        );
        assert_eq!(
            mask_secrets("id AKIAIOSFODNN7EXAMPLE."),
            "id [masked secret, 20 chars]."
        );
        let jwt =
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(mask_secrets(jwt), "[masked secret, 83 chars]");
    }

    #[test]
    fn masks_random_segments_only() {
        assert_eq!(
            mask_secrets("https://x.io/reset?token=Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh"),
            "https://x.io/reset?token=[masked secret, 26 chars]"
        );
        assert_eq!(
            mask_secrets("/api/v2/Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh/items"),
            "/api/v2/[masked secret, 26 chars]/items"
        );
    }

    /// A masked value holds a space: masked again (a scrubbed tree is rendered
    /// through the same rules) its first word was taken for the value and masked
    /// inside the mask.
    #[test]
    fn masked_values_are_masked_once() {
        assert_eq!(
            mask_secrets("https://x.io/login?password=hunter2"),
            "https://x.io/login?password=[masked secret, 7 chars]"
        );
        for t in [
            "https://x.io/login?password=hunter2",
            "https://x.io/l?user=a&pw=hunter2&next=/home",
            "open https://x.io/?token=abc1234 now",
            "db_password=hunter2 next",
            "api_key = \"hunter2\"",
            "{\"password\": \"hunter2\"}",
            "https://x.io/reset?token=Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh",
        ] {
            let once = mask_secrets(t).into_owned();
            assert_ne!(once, t, "{t}");
            assert_eq!(mask_secrets(&once), once, "{t}");
        }
    }

    #[test]
    fn leaves_ordinary_text_alone() {
        for t in [
            "Screenshot_20240101-123456.png",
            "/home/user/projects/deskpilot-core/src/render.rs",
            "getElementsByTagName",
            "commit 3f786850e387550fdab836ed7e6dc881de23001b",
            "Hello, world! This is a sentence with words.",
            "123e4567",
            "sk-learn",
        ] {
            assert_eq!(mask_secrets(t), t, "{t}");
            assert!(matches!(mask_secrets(t), Cow::Borrowed(_)));
        }
    }

    #[test]
    fn code_words() {
        assert!(mentions_code("Verification code"));
        assert!(mentions_code("Enter the OTP"));
        assert!(mentions_code("请输入验证码"));
        assert!(mentions_code("One-time passcode"));
        assert!(!mentions_code("Footprint"));
        assert!(!mentions_code("Postal code"));
        assert!(!mentions_code("Barcode scanner"));
    }

    #[test]
    fn otp_shapes() {
        assert_eq!(otp_digits("493817"), Some(6));
        assert_eq!(otp_digits(" 493 817 "), Some(6));
        assert_eq!(otp_digits("12345678"), Some(8));
        assert_eq!(otp_digits("12345"), None);
        assert_eq!(otp_digits("123456789"), None);
        assert_eq!(otp_digits("12-34-56"), None);
        assert_eq!(otp_digits("-123456"), None);
        assert_eq!(otp_digits("12a456"), None);
    }

    #[test]
    fn values_by_context() {
        let label = Node::new("h:1", Role::Label, "Verification code");
        let field = Node::new("h:2", Role::Textbox, "").value("493817");
        let parent = Node::new("h:0", Role::Group, "").children(vec![label, field]);
        let field = &parent.children[1];
        assert_eq!(
            redacted_value(field, Some(&parent)).as_deref(),
            Some("[masked code, 6 digits]")
        );
        assert_eq!(redacted_value(field, None).as_deref(), Some("493817"));

        let pw = Node::new("h:3", Role::Textbox, "Password")
            .state(State::Password)
            .value("hunter2-SECRET");
        assert_eq!(redacted_value(&pw, None).as_deref(), Some("••••"));
        let empty = Node::new("h:4", Role::Textbox, "Password")
            .state(State::Password)
            .value("");
        assert_eq!(redacted_value(&empty, None).as_deref(), Some(""));
        assert_eq!(
            redacted_value(&Node::new("h:5", Role::Button, "x"), None),
            None
        );
    }

    #[test]
    fn display_forms() {
        let n = Node::new("h:1", Role::Textbox, "").value("line1\nline2 sk-abcdefghijklmnop1234");
        assert_eq!(
            display_value(&n, None, 120).as_deref(),
            Some("line1\\nline2 [masked secret, 23 chars]")
        );
        assert_eq!(
            display_value(&n, None, 5).as_deref(),
            Some("line1…(35 chars)")
        );
        assert_eq!(display_name("say \"hi\"", 120), "say \\\"hi\\\"");
    }
}

mod query_and_label_tests {
    use crate::redact::text::*;
    use crate::redact::*;

    #[test]
    fn secret_query_values_are_masked() {
        let url = "https://shop.example/login?user=bob&pw=Hunter2secret&next=/home";
        let m = mask_secrets(url);
        assert!(!m.contains("Hunter2secret"), "{m}");
        assert!(m.contains("user=bob") && m.contains("next=/home"), "{m}");
        for q in ["?otp=493817", "?key=abc123", "&pass=x9", "?code=77aa"] {
            let t = format!("http://h/p{q}");
            let m = mask_secrets(&t);
            assert!(m.contains("[masked"), "{t} -> {m}");
        }
        assert_eq!(
            mask_secrets("see keyboard=us and monkey=1"),
            "see keyboard=us and monkey=1"
        );
    }

    #[test]
    fn fields_labelled_like_secrets_are_secret_fields() {
        for name in [
            "API key",
            "Access key",
            "Token",
            "OTP",
            "验证码",
            "密钥",
            "Recovery code",
        ] {
            let n = Node::new("h:1", Role::Textbox, name);
            assert!(is_secret_field(&n), "{name}");
        }
        for name in ["Name", "Search", "Keyboard layout", "Password hint"] {
            let n = Node::new("h:1", Role::Textbox, name);
            assert!(!is_secret_field(&n), "{name}");
        }
    }
}
